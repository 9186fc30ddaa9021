"""The claims of :mod:`coldbrew.research.claims.units` in a database: one row per claimed unit in
``coldbrew_claims`` (scope, unit, worker, state, heartbeat), through SQLAlchemy.

A claim is one statement that only one worker can win: the insert of a unit's row (its key is
the scope and the unit), or the update of a stale row whose condition the database checks again
after the row is locked. Heartbeats are seconds on PostgreSQL's clock there (one clock for every
machine), elsewhere on the worker's."""

from __future__ import annotations

import time
from collections.abc import Sequence

from coldbrew.errors import ColdbrewError
from coldbrew.research.claims.base import RUNNING, TABLE, ClaimsBase, lost_claim

INSTALL = "pip install -e '.[research]' (SQLAlchemy and psycopg2-binary)"


def database_url(url: str) -> str:
    """``url`` with a driver SQLAlchemy can load: ``postgresql://`` means psycopg (3) to
    SQLAlchemy 2.1; where only psycopg2 is installed (the [research] extra), it is taken."""
    import importlib.util

    scheme, _, rest = url.partition("://")
    if scheme in ("postgresql", "postgres") and importlib.util.find_spec("psycopg") is None:
        if importlib.util.find_spec("psycopg2") is not None:
            return f"postgresql+psycopg2://{rest}"
    return url


def connect(url: str):
    """A SQLAlchemy engine on ``url`` that has been reached once; ``ColdbrewError`` otherwise."""
    try:
        import sqlalchemy
    except ImportError:
        raise ColdbrewError(f"a database URL needs SQLAlchemy: {INSTALL}") from None
    try:
        engine = sqlalchemy.create_engine(database_url(url), pool_pre_ping=True)
        with engine.connect():
            pass
    except ImportError as error:
        driver = url.split(":")[0]
        raise ColdbrewError(f"{driver} needs its driver ({error.name}): {INSTALL}") from None
    except sqlalchemy.exc.ArgumentError as error:
        raise ColdbrewError(f"{url!r} is not a database URL ({error})") from None
    except sqlalchemy.exc.OperationalError as error:
        reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        raise ColdbrewError(f"cannot reach the database: {reason}; check the URL") from None
    return engine


class DatabaseClaims(ClaimsBase):
    """Claims as rows of ``coldbrew_claims`` in the database at ``url``."""

    def __init__(self, url: str, scope: str, timeout: float, worker: str | None) -> None:
        import sqlalchemy as sa

        super().__init__(timeout, worker)
        self.engine, self.scope = connect(url), scope
        metadata = sa.MetaData()
        self.table = sa.Table(
            TABLE,
            metadata,
            sa.Column("scope", sa.String(200), primary_key=True),
            sa.Column("unit", sa.String(500), primary_key=True),
            sa.Column("worker", sa.String(200), nullable=False),
            sa.Column("state", sa.String(16), nullable=False),
            sa.Column("heartbeat", sa.Float, nullable=False),
        )
        try:
            metadata.create_all(self.engine, checkfirst=True)
        except sa.exc.DatabaseError:  # another worker created it at the same moment
            if not sa.inspect(self.engine).has_table(TABLE):
                raise
        self.on_server_clock = self.engine.dialect.name == "postgresql"

    def _now(self):
        """Seconds now: PostgreSQL's clock, else this machine's."""
        import sqlalchemy as sa

        if self.on_server_clock:
            return sa.cast(sa.extract("epoch", sa.func.clock_timestamp()), sa.Float)
        return sa.literal(time.time(), sa.Float)

    def _this(self, unit: str):
        return (self.table.c.scope == self.scope) & (self.table.c.unit == unit)

    def claim(self, units: Sequence[str]) -> str | None:
        import sqlalchemy as sa

        known = {unit: (state, age) for unit, (state, _, age) in self.records().items()}
        for unit in units:
            state, age = known.get(unit, (None, 0.0))
            if state is None:
                row = {"scope": self.scope, "unit": unit, "worker": self.worker}
                try:
                    with self.engine.begin() as connection:
                        insert = self.table.insert().values(**row, state=RUNNING)
                        connection.execute(insert.values(heartbeat=self._now()))
                    return unit
                except sa.exc.IntegrityError:
                    continue  # another worker claimed it first
            elif state == RUNNING and age > self.timeout:
                stale = self._this(unit) & (self.table.c.state == RUNNING)
                stale &= self._now() - self.table.c.heartbeat > self.timeout
                update = self.table.update().where(stale)
                with self.engine.begin() as connection:
                    taken = update.values(worker=self.worker, heartbeat=self._now())
                    if connection.execute(taken).rowcount == 1:
                        return unit
        return None

    def _update(self, unit: str, state: str | None) -> None:
        mine = self._this(unit) & (self.table.c.worker == self.worker)
        mine &= self.table.c.state == RUNNING
        with self.engine.begin() as connection:
            if state is None:
                statement = self.table.delete().where(mine)
            else:
                statement = self.table.update().where(mine)
                statement = statement.values(state=state, heartbeat=self._now())
            if connection.execute(statement).rowcount == 1:
                return
            holder = connection.execute(
                self.table.select().with_only_columns(self.table.c.worker).where(self._this(unit))
            ).scalar()
        raise lost_claim(unit, holder)

    def records(self) -> dict[str, tuple[str, str, float]]:
        import sqlalchemy as sa

        columns = (self.table.c.unit, self.table.c.state, self.table.c.worker)
        age = (self._now() - self.table.c.heartbeat).label("age")
        query = sa.select(*columns, age).where(self.table.c.scope == self.scope)
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return {unit: (state, worker, float(age)) for unit, state, worker, age in rows}

    def close(self) -> None:
        self.engine.dispose()
