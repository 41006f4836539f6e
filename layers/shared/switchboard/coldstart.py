"""The garbage collector, paused while a function's handler module imports.

Importing a function builds tens of thousands of objects that live as long as its container
(modules, classes, schemas, boto3's loaders), yet CPython's cyclic collector walks the growing
heap again and again while they load: about a twentieth of a cold start. Each handler imports
this module before anything else, which pauses the collector, and calls `imported()` as its
last statement: one collection then frees the import's own garbage, what is left is moved out of
the collector's reach for good (`gc.freeze`, so no later collection walks it again) and
collection resumes for what the invocations allocate.
"""

from __future__ import annotations

import gc

gc.disable()


def imported() -> None:
    """The handler's module is loaded: collect once, freeze what lives on, resume collection."""
    gc.collect()
    gc.freeze()
    gc.enable()
