"""The REST plumbing that the core API (`api/`) and the kinds' endpoints (`kinds/<kind>/api.py`)
share: error shapes and schema pieces, strict parsers, pagination, idempotency and content
negotiation. It lives under `annotation` so that the kinds never import `api/`: arrows between
the two packages point one way, from `api` to `annotation` (docs/architecture.md "Rules that
keep the layers apart")."""
