"""The supervisor console: pages to create and edit projects, manage users, browse items
and preview the annotate page, so that nothing needs curl. Writes go through the REST API
(the pages' scripts post with the session and CSRF) and so through the same services; the
pages here only read. Kinds are asked through their hooks, never imported."""
