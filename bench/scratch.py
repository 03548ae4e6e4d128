"""Helpers the benchmark scripts share for their scratch PostgreSQL databases."""

import io


def admin_sql(server: str, sql: str) -> None:
    """Run `sql` on the server's maintenance database (CREATE / DROP DATABASE)."""
    import psycopg2

    conn = psycopg2.connect(f"{server}/postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(sql)
    conn.close()


def copy_rows(cursor, table, columns, rows):
    """Bulk-load tab-separated text rows with COPY (far faster than INSERTs at 100K rows)."""
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(row))
        buffer.write("\n")
    buffer.seek(0)
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buffer)
