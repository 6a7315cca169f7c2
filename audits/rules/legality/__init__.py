"""Legality of training and evaluation: what the code does with validation data, judged by the
static analysis in audits/legality. One module per rule: its row, its words, its check. Every
module of this package is imported, so a new rule's module is all it takes; its row's `place`
orders it in the catalogue."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
