"""Reading what the compilers wrote: ELF layout and names, cuobjdump and nvdisasm, the SASS counts.

Trusted parent only. Every file read here was written where candidate code could reach it, so each reader caps
sizes, follows no link and refuses what it does not understand.
"""
