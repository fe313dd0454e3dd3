"""/compare/: two models or two kernels side by side (`selectors.py`), the models' curves (`figures.py`), the JSON
(`serializers.py`) and the page (`views.py`)."""
