"""Knowledge packs: manifests load and render, token budgets hold, malformed manifests are rejected with the file
and field named, and the Hopper helper header and worked examples really assemble to the SASS they promise.

The compile tests run the real nvcc 13 and cuobjdump on the CPU (no GPU needed); they are skipped, with the
reason, only where those tools are missing.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from evaluator.binaries.sass import count_families, disassemble, parse_sass
from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.taskdata import TaskDataError
from evaluator.build.compile import find_cuobjdump, find_nvcc, nvcc_command
from evaluator.errors import EnvironmentProblem
from evaluator.source_policy.policy import check_source
from evaluator.suite.packs import DEFAULT_ROOT, TOKENIZER, count_tokens, load_pack, load_packs, main

REPO = Path(__file__).resolve().parents[2]
PACKS = REPO / "tasks" / "packs"
INCLUDE = PACKS / "include"
PROBE = REPO / "tests" / "fixtures" / "packs" / "hopper_probe.cu"
ARCH_PACK_TOKENS = (20_000, 30_000)


# --------------------------------------------------------------------------- the committed packs


def test_default_root_is_the_repository_packs_folder() -> None:
    assert DEFAULT_ROOT == PACKS


def test_required_packs_exist_and_every_manifest_loads() -> None:
    packs = load_packs(PACKS)
    ids = [p.id for p in packs]
    assert {"hopper", "none"} <= set(ids)
    # load_packs must see every manifest on disk (blackwell and later packs included), in id order.
    on_disk = sorted(p.parent.name for p in PACKS.glob("*/manifest.json"))
    assert ids == on_disk


@pytest.mark.parametrize("pack_id", sorted(p.parent.name for p in PACKS.glob("*/manifest.json")))
def test_pack_renders_every_fragment_and_header_in_order(pack_id: str) -> None:
    pack = load_pack(PACKS, pack_id)
    position = 0
    for rel in pack.fragments:
        body = (PACKS / rel).read_text(encoding="utf-8").strip()
        assert body, f"{rel} is empty"
        found = pack.text.find(body, position)
        assert found >= position, f"{rel} missing or out of order in the rendered {pack_id} pack"
        position = found + len(body)
    for rel in pack.headers:
        block = f"## Helper header `{rel}`\n\n```cuda\n{(PACKS / rel).read_text(encoding='utf-8').strip()}\n```"
        found = pack.text.find(block, position)
        assert found >= position, f"{rel} missing or out of order as a cuda block in the {pack_id} pack"
        position = found + len(block)
    assert pack.sha256 == hashlib.sha256(pack.text.encode("utf-8")).hexdigest()
    assert pack.tokenizer == TOKENIZER
    assert pack.token_count == count_tokens(pack.text)[0]


@pytest.mark.parametrize("pack_id", sorted(p.parent.name for p in PACKS.glob("*/manifest.json")))
def test_token_budget(pack_id: str) -> None:
    pack = load_pack(PACKS, pack_id)
    if pack.arch is None:
        # The ablation pack is the ABI and the rules only: small, and without architecture notes.
        assert pack.token_count < 2_500, pack.token_count
        assert "wgmma" not in pack.text and "tcgen05" not in pack.text
    else:
        assert pack.arch in ARCHES
        low, high = ARCH_PACK_TOKENS
        assert low <= pack.token_count <= high, f"{pack_id}: {pack.token_count} tokens"


def test_hopper_pack_covers_the_instructions_it_is_for() -> None:
    pack = load_pack(PACKS, "hopper")
    assert pack.arch == "sm_90a"
    assert pack.headers == ("include/ptxbench/common.cuh", "include/ptxbench/hopper.cuh")
    for needle in (
        "wgmma.mma_async.sync.aligned",
        "wgmma.fence.sync.aligned",
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        ".multicast::cluster",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "fence.proxy.async.shared::cta",
        "mbarrier.try_wait.parity",
        "mbarrier.arrive.expect_tx",
        "setmaxnreg.inc.sync.aligned.u32",
        "cuTensorMapEncodeTiled",
        "cudaGetDriverEntryPointByVersion",
        "__grid_constant__",
        "__cluster_dims__",
        "cudaLaunchKernelEx",
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl)",
        "HGMMA",
        "UTMALDG",
    ):
        assert needle in pack.text, needle


def test_documented_descriptor_example_matches_the_bit_layout() -> None:
    """The worked 64x64 K-major 128B-swizzle descriptor in wgmma.md, re-derived from the PTX ISA bit table."""

    def desc(addr: int, lbo: int, sbo: int, swizzle: int) -> int:
        return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (swizzle << 62)

    text = (PACKS / "hopper" / "wgmma.md").read_text(encoding="utf-8")
    documented = re.search(r"desc\s+= .*= (0x[0-9a-f]{16})", text)
    assert documented is not None
    assert int(documented.group(1), 16) == desc(0x0400, 16, 1024, 1)
    # k-step kk advances the start address by 32 bytes = +2 in the encoded field.
    assert desc(0x0400 + 32 * 3, 16, 1024, 1) == desc(0x0400, 16, 1024, 1) + 6


def test_count_tokens_uses_a_real_bpe_tokenizer() -> None:
    # Reference counts for cl100k_base (tiktoken's documented example: 6 tokens).
    assert count_tokens("tiktoken is great!") == (6, TOKENIZER)
    assert count_tokens("hello world")[0] == 2
    # A special-token string is counted as text instead of raising.
    assert count_tokens("<|endoftext|>")[0] > 1


def test_cli_lists_each_pack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(PACKS)]) == 0
    out = capsys.readouterr().out.splitlines()
    by_id = {line.split()[0]: line for line in out}
    hopper = load_pack(PACKS, "hopper")
    assert str(hopper.token_count) in by_id["hopper"] and hopper.sha256 in by_id["hopper"]
    assert "none" in by_id


# --------------------------------------------------------------------------- malformed manifests


def _write_pack(root: Path, manifest: dict | str, files: dict[str, str] | None = None, pack_id: str = "demo") -> None:
    for rel, body in (files or {"common/a.md": "# A\n", "include/x.cuh": "// x\n"}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
    (root / pack_id).mkdir(parents=True, exist_ok=True)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (root / pack_id / "manifest.json").write_text(text, encoding="utf-8")


def _good_manifest(**override: object) -> dict:
    manifest = {
        "id": "demo",
        "title": "Demo",
        "arch": "sm_90a",
        "description": "one line",
        "fragments": ["common/a.md"],
        "headers": ["include/x.cuh"],
    }
    manifest.update(override)
    return manifest


def test_minimal_pack_renders_exactly(tmp_path: Path) -> None:
    _write_pack(tmp_path, _good_manifest())
    pack = load_pack(tmp_path, "demo")
    assert pack.text == "# A\n\n## Helper header `include/x.cuh`\n\n```cuda\n// x\n```\n"
    assert pack.fragments == ("common/a.md",) and pack.headers == ("include/x.cuh",)
    assert pack.token_count == count_tokens(pack.text)[0] > 0


@pytest.mark.parametrize(
    ("manifest", "field", "message"),
    [
        ("{not json", "manifest", "not valid JSON"),
        ("[1, 2]", "manifest", "JSON object"),
        (_good_manifest(fragments=["common/a.md", "common/missing.md"]), "fragments[1]", "file not found"),
        (_good_manifest(headers=["include/nope.cuh"]), "headers[0]", "file not found"),
        (_good_manifest(arch="sm_89"), "arch", "unknown architecture"),
        (_good_manifest(arch=90), "arch", "unknown architecture"),
        ({k: v for k, v in _good_manifest().items() if k != "arch"}, "arch", "missing"),
        (_good_manifest(id="other"), "id", "folder"),
        (_good_manifest(title=""), "title", "non-empty string"),
        (_good_manifest(fragments=[]), "fragments", "at least one"),
        (_good_manifest(fragments="common/a.md"), "fragments", "list of paths"),
        (_good_manifest(fragments=["../outside.md"]), "fragments[0]", "inside the packs root"),
        (_good_manifest(fragments=["/etc/passwd.md"]), "fragments[0]", "inside the packs root"),
        (_good_manifest(fragments=["common/a.md", "common/a.md"]), "fragments", "twice"),
        (_good_manifest(fragments=["include/x.cuh"]), "fragments[0]", ".md"),
        (_good_manifest(extra=1), "extra", "unknown field"),
    ],
)
def test_malformed_manifest_names_file_and_field(
    tmp_path: Path, manifest: dict | str, field: str, message: str
) -> None:
    (tmp_path / "outside.md").write_text("outside\n", encoding="utf-8")
    _write_pack(tmp_path / "packs", manifest)
    with pytest.raises(TaskDataError) as info:
        load_pack(tmp_path / "packs", "demo")
    err = info.value
    assert err.path == str(tmp_path / "packs" / "demo" / "manifest.json")
    assert err.field == field
    assert message in err.message
    assert "manifest.json" in str(err) and f"'{field}'" in str(err)


def test_missing_manifest_and_bad_id(tmp_path: Path) -> None:
    with pytest.raises(TaskDataError) as info:
        load_pack(tmp_path, "absent")
    assert info.value.field == "manifest" and info.value.path.endswith("absent/manifest.json")
    with pytest.raises(TaskDataError) as info:
        load_pack(tmp_path, "../etc")
    assert info.value.field == "id"


def test_symlink_escaping_the_root_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("secret\n", encoding="utf-8")
    _write_pack(tmp_path / "packs", _good_manifest(fragments=["common/link.md"]))
    (tmp_path / "packs" / "common" / "link.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(TaskDataError) as info:
        load_pack(tmp_path / "packs", "demo")
    assert info.value.field == "fragments[0]" and "outside" in info.value.message


def test_load_packs_stops_at_the_first_bad_manifest(tmp_path: Path) -> None:
    _write_pack(tmp_path, _good_manifest())
    _write_pack(tmp_path, _good_manifest(id="zz", arch="sm_7"), pack_id="zz")
    with pytest.raises(TaskDataError) as info:
        load_packs(tmp_path)
    assert info.value.path.endswith("zz/manifest.json") and info.value.field == "arch"
    assert main(["--root", str(tmp_path)]) == 1


# --------------------------------------------------------------------------- real nvcc + cuobjdump


def _tools() -> tuple[str, str]:
    try:
        return find_nvcc(), find_cuobjdump()
    except EnvironmentProblem as exc:
        pytest.skip(f"CUDA tools missing: {exc}")


def _cuda_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```cuda\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def _opcodes(sass: str) -> set[str]:
    return {ins.opcode for ins in parse_sass(sass)}


def test_hopper_header_wrappers_assemble_to_their_sass(tmp_path: Path) -> None:
    nvcc, cuobjdump = _tools()
    cubin = tmp_path / "probe.cubin"
    cmd = [nvcc, "-cubin", "-O3", "-std=c++17", "-gencode", ARCHES["sm_90a"].gencode, f"-I{INCLUDE}"]
    proc = subprocess.run([*cmd, str(PROBE), "-o", str(cubin)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    opcodes = _opcodes(disassemble(cubin, cuobjdump))
    expected = {
        "HGMMA.64x64x16.F32.BF16",  # wgmma_m64n64k16_ss / _rs
        "HGMMA.64x128x16.F32.BF16",  # wgmma_m64n128k16_ss / _rs
        "HGMMA.64x256x16.F32.BF16",  # wgmma_m64n256k16_ss
        "WARPGROUP.ARRIVE",  # wgmma_fence
        "WARPGROUP.DEPBAR.LE",  # wgmma_wait
        "UTMALDG.2D",  # tma_load_2d
        "UTMALDG.3D",  # tma_load_3d
        "UTMALDG.2D.MULTICAST",  # tma_load_2d_multicast
        "UTMASTG.2D",  # tma_store_2d
        "UTMAREDG.2D.ADD",  # tma_reduce_add_2d
        "UTMACCTL.PF",  # tma_prefetch_desc
        "SYNCS.EXCH.64",  # mbar_init
        "SYNCS.PHASECHK.TRANS64.TRYWAIT",  # mbar_try_wait
        "FENCE.VIEW.ASYNC.S",  # fence_proxy_async_smem
        "USETMAXREG.TRY_ALLOC.CTAPOOL",  # setmaxnreg_inc
        "USETMAXREG.DEALLOC.CTAPOOL",  # setmaxnreg_dec
        "UCGABAR_ARV",  # cluster_sync
        "ELECT",  # elect_one
    }
    missing = expected - opcodes
    assert not missing, f"missing SASS: {sorted(missing)}"
    assert any(op.startswith("SYNCS.ARRIVE.TRANS64") for op in opcodes)  # mbar_arrive*/expect_tx
    # The transposed-B form really sets the transpose bit.
    sass = disassemble(cubin, cuobjdump)
    assert re.search(r"HGMMA\.64x256x16\.F32\.BF16 \S+, gdesc\[UR\d+\]\.tnspB", sass)


def test_hopper_header_is_rejected_for_plain_sm90(tmp_path: Path) -> None:
    """The wrappers need the arch-specific target: a plain sm_90 build must fail, not silently drop them."""
    nvcc, _ = _tools()
    cmd = [nvcc, "-cubin", "-std=c++17", "-gencode", "arch=compute_90,code=sm_90", f"-I{INCLUDE}", str(PROBE)]
    proc = subprocess.run([*cmd, "-o", str(tmp_path / "x.cubin")], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "wgmma" in proc.stderr or "setmaxnreg" in proc.stderr


@pytest.mark.slow  # nvcc with the TVM-FFI headers
def test_abi_starter_builds_with_the_harness_command(tmp_path: Path) -> None:
    nvcc, _ = _tools()
    blocks = _cuda_blocks((PACKS / "common" / "abi.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1
    source = tmp_path / "starter.cu"
    source.write_text(blocks[0], encoding="utf-8")
    assert check_source(blocks[0]) == []
    proc = subprocess.run(
        nvcc_command(source, tmp_path / "starter.so", "sm_90a", nvcc), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "starter.so").stat().st_size > 0


@pytest.mark.slow  # nvcc with the TVM-FFI headers
def test_hopper_gemm_walkthrough_builds_and_uses_wgmma_and_tma(tmp_path: Path) -> None:
    nvcc, cuobjdump = _tools()
    blocks = [b for b in _cuda_blocks((PACKS / "hopper" / "gemm.md").read_text(encoding="utf-8")) if "run_impl" in b]
    assert len(blocks) == 1
    assert check_source(blocks[0]) == []
    source = tmp_path / "gemm.cu"
    source.write_text(blocks[0], encoding="utf-8")
    cmd = nvcc_command(source, tmp_path / "gemm.so", "sm_90a", nvcc)
    cmd.insert(1, f"-I{INCLUDE}")  # stands in for pasting the two ptxbench headers
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "serialized" not in proc.stderr  # no wgmma serialization warning from ptxas
    assert "spill stores" not in proc.stderr or " 0 bytes spill stores" in proc.stderr
    counts = count_families(disassemble(tmp_path / "gemm.so", cuobjdump), "sm_90a")
    assert counts.families["gmma"] >= 4 and counts.families["tma"] >= 2
    assert counts.opcodes.get("HGMMA.64x256x16.F32.BF16", 0) == 4  # BK/16 k-steps per k-block
