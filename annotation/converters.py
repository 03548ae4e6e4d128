"""The `<id:...>` path converter: a database id, which PostgreSQL keeps in a bigint. A
longer number in a URL names nothing (404) rather than overflowing the query (500)."""

BIGINT_MAX = 2**63 - 1


class IdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > BIGINT_MAX:
            # A ValueError here tells the resolver that the pattern does not match.
            raise ValueError("beyond the bigint range")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
