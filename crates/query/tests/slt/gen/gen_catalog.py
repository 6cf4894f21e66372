import os
from lib import Slt

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "catalog.slt"),
    """Catalog statements: SHOW DATABASES, SHOW TABLES, SHOW COLUMNS, DESCRIBE (name, type, kind:
tag / time / field), tempora_columns('t'), information_schema, SHOW TAG VALUES (distinct
non-NULL values of a tag, sorted), DROP TABLE (the table is gone and can be created again,
with another schema). A new column is a tag when its first value is a string, a field
otherwise (1.0 float, 1 integer, true boolean).""",
)

s.section("An empty database")
s.query("TTT", "SHOW DATABASES", expect=["db forever auto"])
s.query("T", "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'", expect=[])

s.section("Two tables")
cols = ["time", "host", "region", "v", "n", "ok"]
s.insert("cpu", cols, [
    ("2024-01-01T00:00:00Z", "b", "eu", 1.0, 1, True),
    ("2024-01-01T00:00:00Z", "a", "us", 2.0, 2, False),
])
s.insert("cpu", ["time", "host", "v"], [("2024-01-01T00:00:01Z", "c", 3.0)],
         comment="A series without region.")
s.insert("mem", ["time", "host", "used"], [("2024-01-01T00:00:00Z", "a", 0.5)])
s.flush()
s.insert("cpu", cols, [
    ("2024-01-02T00:00:00Z", "d", "ap", 4.0, 4, True),
    ("2024-01-02T00:00:00Z", "a", "eu", 5.0, 5, True),
], comment="More tag values, in the memtable.")

s.query("TTT", "SHOW DATABASES", expect=["db forever auto"])
s.query("TTTT", "SHOW TABLES", rowsort=True, expect=[
    "db public cpu BASE TABLE",
    "db public mem BASE TABLE",
    "db information_schema tables VIEW",
    "db information_schema views VIEW",
    "db information_schema columns VIEW",
    "db information_schema df_settings VIEW",
    "db information_schema schemata VIEW",
    "db information_schema routines VIEW",
    "db information_schema parameters VIEW",
], comment="DataFusion's SHOW TABLES: every table of information_schema.tables.")
s.query("T", "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
        expect=["cpu", "mem"])

s.section("Columns")
desc = [
    "host string tag",
    "region string tag",
    "time timestamp time",
    "v float field",
    "n integer field",
    "ok boolean field",
]
s.query("TTT", "DESCRIBE cpu", rowsort=True, expect=desc,
        comment="Tags, then time, then fields; rowsort because the order within tags and fields is not specified.")
s.query("TTT", "SELECT column_name, data_type, kind FROM tempora_columns('cpu') ORDER BY column_name",
        expect=sorted(desc))
s.query("TTT", "SELECT column_name, data_type, is_nullable FROM information_schema.columns\n"
        "WHERE table_schema = 'public' AND table_name = 'cpu' ORDER BY column_name", expect=[
    "host Utf8 YES",
    "n Int64 YES",
    "ok Boolean YES",
    "region Utf8 YES",
    'time Timestamp(ns, "UTC") NO',
    "v Float64 YES",
], comment="Arrow's types; time is a nanosecond timestamp in UTC and never NULL.")
s.query("TTTTTT", "SHOW COLUMNS FROM mem", rowsort=True, expect=[
    "db public mem host Utf8 YES",
    'db public mem time Timestamp(ns, "UTC") NO',
    "db public mem used Float64 YES",
])

s.section("Tag values")
s.query("T", "SHOW TAG VALUES FROM cpu WITH KEY = host", expect=["a", "b", "c", "d"],
        comment="From files and memtable, distinct, sorted.")
s.query("T", "SHOW TAG VALUES FROM cpu WITH KEY=region", expect=["ap", "eu", "us"],
        comment="c has no region: NULL is not a value.")
s.query("T", "show tag values from cpu with key = region;", expect=["ap", "eu", "us"])
s.query("T", "SELECT DISTINCT host FROM cpu WHERE region = 'eu' ORDER BY host", expect=["a", "b"])

s.section("Errors")
s.error("DESCRIBE nope", "not found")
s.error("SELECT * FROM nope", "not found")
s.error("SHOW TAG VALUES FROM cpu", "WITH KEY")

s.section("DROP TABLE")
s.stmt("DROP TABLE mem")
s.query("T", "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
        expect=["cpu"])
s.error("SELECT * FROM mem", "not found")
s.error("DESCRIBE mem", "not found")
s.error("DROP TABLE mem", "doesn't exist")
s.stmt("DROP TABLE IF EXISTS mem")
s.insert("mem", ["time", "host", "used"], [("2024-01-03T00:00:00Z", "z", 7)],
         comment="Created again, with `used` now an integer: nothing of the old table is left.")
s.query("TTT", "DESCRIBE mem", rowsort=True, expect=["host string tag", "time timestamp time", "used integer field"])
s.query("TTI", "SELECT host, time, used FROM mem ORDER BY time", expect=["z 2024-01-03T00:00:00Z 7"])
s.query("T", "SHOW TAG VALUES FROM mem WITH KEY = host", expect=["z"])

s.stmt("DROP TABLE cpu", comment="cpu has rows in files and in the memtable.")
s.insert("cpu", ["time", "host", "v"], [("2024-01-05T00:00:00Z", "x", 9.0)])
s.query("TTR", "SELECT host, time, v FROM cpu", expect=["x 2024-01-05T00:00:00Z 9.0"])
s.query("T", "SHOW TAG VALUES FROM cpu WITH KEY = host", expect=["x"])
s.query("TTT", "DESCRIBE cpu", rowsort=True, expect=["host string tag", "time timestamp time", "v float field"])
s.flush()
s.query("I", "SELECT count(*) FROM cpu", expect=["1"], comment="The old files stay gone after a flush.")
s.query("TTT", "SHOW DATABASES", expect=["db forever auto"])

s.section("Retention and partition settings")
s.c("A table's settings override its database's, which override the server's (forever, auto).")
s.stmt("ALTER TABLE cpu SET (partition = '7d')")
s.stmt("ALTER DATABASE db SET (ttl = '3650d')")
s.query("TTT", "SHOW DATABASES", expect=["db 3650d auto"])
s.query("TTTTTT",
        "SELECT table_name, ttl, partition, own_ttl, own_partition, next_partition FROM tempora_tables() ORDER BY table_name",
        expect=["cpu 3650d 1w NULL 1w 1w", "mem 3650d auto NULL NULL 1d"])
s.stmt("ALTER TABLE mem SET (ttl = 'forever', partition = '12h')")
s.query("TTTT", "SELECT table_name, ttl, own_ttl, next_partition FROM tempora_tables() ORDER BY table_name",
        expect=["cpu 3650d NULL 1w", "mem forever forever 12h"])
s.error("ALTER TABLE cpu SET (colour = 'red')", "unknown option")
s.error("ALTER TABLE cpu SET (ttl = '10s')", "shorter than")
s.error("ALTER TABLE nope SET (ttl = '1d')", "doesn't exist")
s.error("ALTER DATABASE nope SET (ttl = '1d')", "nope")
s.error("CREATE TABLE t2 (host TAG, v DOUBLE) WITH (partition = 'weekly')", "partition")

s.write()
