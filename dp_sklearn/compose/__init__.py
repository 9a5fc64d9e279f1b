"""Private preprocessing of tables built from their public schema."""

from ._column import make_private_column_transformer

__all__ = ["make_private_column_transformer"]
