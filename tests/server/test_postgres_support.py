"""The PostgreSQL fixtures of tests/pg_support.py (a plugin of tests/conftest.py): a cluster
that answers, and a fresh database for each use of ``postgres_url``."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg_support import create_database


async def test_the_cluster_answers(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url) as connection:
        cursor = await connection.execute("select version(), current_database()")
        row = await cursor.fetchone()
    assert row is not None
    version, database = row
    assert isinstance(version, str)
    assert version.startswith("PostgreSQL ")
    assert database == postgres_url.split("/")[3].split("?")[0]
    assert database.startswith("t_")


async def test_each_database_is_fresh_and_distinct(
    postgres_cluster: str, postgres_url: str
) -> None:
    other_url = create_database(postgres_cluster, "t_other")
    assert other_url != postgres_url
    async with await psycopg.AsyncConnection.connect(postgres_url) as first:
        await first.execute("create table marker (n int)")
        await first.commit()
        cursor = await first.execute("select current_database()")
        first_row = await cursor.fetchone()
    async with await psycopg.AsyncConnection.connect(other_url) as second:
        cursor = await second.execute("select current_database(), to_regclass('marker')")
        second_row = await cursor.fetchone()
    assert first_row is not None
    assert second_row is not None
    assert first_row[0] != second_row[0] == "t_other"
    assert second_row[1] is None


def test_bad_database_names_are_refused(postgres_cluster: str) -> None:
    with pytest.raises(ValueError, match="not a plain database name"):
        create_database(postgres_cluster, "x; drop database postgres")
