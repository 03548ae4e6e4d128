"""The core's HTML pages, one module per area (projects, dashboard, annotator quality, audit,
the feedback inbox, error pages). Like the API, they only parse, check access and call services."""
