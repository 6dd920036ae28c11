"""The public API's modules (issue 29): what ``py.typed`` is checked on
(tests/packaging/test_public_types.py) and what the API reference documents
(tests/docs/test_docs_site.py)."""

PUBLIC_MODULES = ("privot", "privot.heatmaps", "privot.barycenters", "privot.sampling",
                  "privot.learning", "privot.planning", "privot.error_bounds",
                  "privot.grid", "privot.bounds", "privot.privacy", "privot.privacy.ledger",
                  "privot.ot", "privot.datasets", "privot.errors")
