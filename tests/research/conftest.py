"""Fixtures of the research tests: a real PostgreSQL server (postgres_support) for the tests of
workers that share a search or a set of units through a database."""

from __future__ import annotations

import itertools

import pytest

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a PostgreSQL server started for this session, or skip with the reason."""
    from postgres_support import running_postgres, why_not

    reason = why_not()
    if reason is not None:
        pytest.skip(f"no PostgreSQL for this test: {reason}")
    try:
        with running_postgres() as url:
            yield url
    except RuntimeError as error:
        pytest.skip(f"PostgreSQL did not start: {error}")


@pytest.fixture
def postgres_url(postgres_server):
    """A new empty database on the session's server, for one test."""
    from postgres_support import new_database

    return new_database(postgres_server, f"test_{next(_databases)}")
