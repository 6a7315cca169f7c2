"""The static check that keeps a script which trains on import from being imported."""

from __future__ import annotations

import pytest

from audits.smoke.guard import starts_on_import

GUARDED = """
def main():
    train()

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("source, expected", [
    (GUARDED, None),
    (GUARDED.replace('__name__ == "__main__"', '"__main__" == __name__'), None),
    ("def main():\n    pass\n\nmain()\n", (4, "a call of main() at the top level")),
    ("def train():\n    return 1\n\nloss = train()\n", (4, "a call of train() at the top level")),
    ("import torch\nmodel = torch.nn.Linear(2, 2)\nfor step in range(10):\n    model(step)\n",
     (3, "a loop at the top level")),
    ("import torch\nwhile True:\n    pass\n", (2, "a loop at the top level")),
    # only definitions and calls of other modules' functions: importing it starts nothing
    ("import torch\nclass Hyperparameters:\n    pass\nargs = Hyperparameters()\ntorch.manual_seed(0)\n", None),
    ("def main(:\n", None),  # does not parse: the import reports the SyntaxError
])
def test_starts_on_import(source, expected):
    assert starts_on_import(source) == expected
