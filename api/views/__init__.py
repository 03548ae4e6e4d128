"""The core's DRF views, one module per area of docs/api.md. Each view parses, calls the
access layer and one service or selector, and renders."""
