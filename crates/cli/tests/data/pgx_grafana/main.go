// Command pgx_grafana sends Tempora's PostgreSQL port what Grafana's PostgreSQL data source
// (pkg/tsdb/grafana-postgresql-datasource, pgx v5) sends, the way it sends it, and prints one JSON
// line per case for crates/cli/tests/e2e_pgx.rs. Modes: "ping" is the health check (pool.Ping:
// pgconn's Exec of "-- ping"); "simple" is every panel, variable and editor query
// (PgConn().Exec(sql).ReadAll(): simple protocol, text results, several statements in one text);
// "extended" is the schema handler's pool.Query with arguments (QueryExecModeCacheStatement).
// columns/types/rows are Grafana's frame: the first SELECT result's fields and the rows of every
// result tagged SELECT (others skipped; a SELECT with other column names is Grafana's error).
// Values are decoded by type OID as Grafana decodes them, printed as text (numbers in Go's
// shortest form, times RFC 3339 UTC, NULL null); types are pgx's names ("oid:N" if unknown).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The dashboard's time range; macros expand against it as Grafana expands them.
var (
	from = time.Date(2023, 11, 14, 22, 0, 0, 123e6, time.UTC)
	to   = time.Date(2023, 11, 14, 22, 30, 0, 456e6, time.UTC)
)

// postgresMetaQuery.ts: buildSchemaConstraint() (public/app/plugins/datasource/grafana-postgresql-datasource).
const schemaConstraint = `
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )`

// postgresMetaQuery.ts: showTables().
var showTables = `SELECT
    CASE WHEN ` + schemaConstraint + `
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN ` + schemaConstraint + ` THEN 0 ELSE 1 END, 1`

// postgresMetaQuery.ts: getSchema('cpu'), the query builder's column list.
var getSchema = `SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('cpu'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('cpu'))[1]
          AND quote_ident(table_name) = (parse_ident('cpu'))[2]
        ELSE quote_ident(table_name) = 'cpu'
          AND ` + schemaConstraint + `
      END`

type kase struct {
	name, mode, format, sql string
	args                    []any
}

var cases = []kase{
	{"health_check", "ping", "", "-- ping", nil},
	{"version_check", "simple", "table", `SELECT current_setting('server_version_num')::int/100 as version`, nil},
	{"timescaledb_check", "simple", "table", `SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'`, nil},
	{"version_function", "simple", "table", `SELECT version()`, nil},
	{"show_schemas", "simple", "table", `SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name`, nil},
	{"show_tables", "simple", "table", showTables, nil},
	{"show_tables_in_schema", "simple", "table", `SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1`, nil},
	{"column_lookup", "simple", "table", getSchema, nil},
	// schema.go (the schemads resource handler): pool.Query with arguments.
	{"schemads_schemas", "extended", "", `SELECT schema_name FROM information_schema.schemata
		 WHERE schema_name NOT LIKE 'pg_%' AND schema_name != 'information_schema'
		 ORDER BY schema_name`, nil},
	{"schemads_tables", "extended", "", `SELECT table_name FROM information_schema.tables
		 WHERE table_schema = $1 AND table_type IN ('BASE TABLE', 'VIEW')
		 ORDER BY table_name`, []any{"public"}},
	{"schemads_columns", "extended", "", `SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale
		 FROM information_schema.columns
		 WHERE table_schema = $1 AND table_name = $2
		 ORDER BY ordinal_position`, []any{"public", "cpu"}},
	{"ts_time_group", "simple", "time_series", `SELECT
  $__timeGroupAlias(time, 5m),
  host AS metric,
  avg(usage_user) AS "value"
FROM cpu
WHERE
  $__timeFilter(time)
GROUP BY 1,2
ORDER BY 1,2`, nil},
	{"ts_timescaledb", "simple", "time_series", `SELECT $__timeGroupAlias(time, 5m), host AS metric, max(usage_user) AS "value" FROM cpu WHERE $__timeFilter(time) GROUP BY 1,2 ORDER BY 1,2`, nil},
	{"ts_raw_wide", "simple", "time_series", `SELECT $__time(time), usage_user, usage_system FROM cpu WHERE $__timeFilter(time) AND host = 'a' ORDER BY 1 LIMIT 3`, nil},
	{"table_builder_max", "simple", "table", `SELECT host, max(usage_user) FROM cpu WHERE $__timeFilter(time) GROUP BY host ORDER BY host LIMIT 50 `, nil},
	{"table_builder_count", "simple", "table", `SELECT region, count(usage_system) FROM cpu GROUP BY region LIMIT 50 `, nil},
	{"multi_set_then_select", "simple", "time_series", `SET statement_timeout = '10s';
SELECT $__timeGroupAlias(time, 5m), avg(usage_user) AS "value"
FROM cpu
WHERE $__timeFilter(time) AND host = 'a'
GROUP BY 1
ORDER BY 1`, nil},
	{"multi_two_selects", "simple", "table", `SELECT host, usage_user FROM cpu WHERE host = 'a' AND time = '2023-11-14T22:10:00Z'; SELECT host, usage_user FROM cpu WHERE host = 'b' AND time = '2023-11-14T22:10:00Z';`, nil},
	{"multi_time_zone", "simple", "table", `SET TIME ZONE -7; SELECT time, usage_user FROM cpu WHERE host = 'a' ORDER BY time LIMIT 1; SET TIME ZONE DEFAULT; SELECT time, usage_user FROM cpu WHERE host = 'a' ORDER BY time LIMIT 1;`, nil},
	{"error_unknown_table", "simple", "table", `SELECT * FROM no_such_table WHERE $__timeFilter(time)`, nil},
	{"after_error", "simple", "table", `SELECT count(*) AS n FROM cpu`, nil},
}

var macro = regexp.MustCompile(`\$([_a-zA-Z0-9]+)\(([^\)]*)\)`)

// expand is Grafana's postgres macro engine for the macros used here; timescale is the data
// source's TimescaleDB toggle ($__timeGroup becomes time_bucket).
func expand(sql string, timescale bool) string {
	return macro.ReplaceAllStringFunc(sql, func(m string) string {
		g := macro.FindStringSubmatch(m)
		args := strings.Split(g[2], ",")
		for i := range args {
			args[i] = strings.Trim(args[i], " ")
		}
		f, t := from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano)
		switch g[1] {
		case "__time":
			return args[0] + ` AS "time"`
		case "__timeFilter":
			return fmt.Sprintf("%s BETWEEN '%s' AND '%s'", args[0], f, t)
		case "__timeGroupAlias":
			d, err := time.ParseDuration(strings.Trim(args[1], "'"))
			if err != nil {
				panic(err)
			}
			if timescale {
				return fmt.Sprintf("time_bucket('%.3fs',%s)", d.Seconds(), args[0]) + ` AS "time"`
			}
			return fmt.Sprintf("floor(extract(epoch from %s)/%v)*%v", args[0], d.Seconds(), d.Seconds()) + ` AS "time"`
		}
		panic("macro " + g[1])
	})
}

type out struct {
	Case        string      `json:"case"`
	Mode        string      `json:"mode"`
	Format      string      `json:"format"`
	SQL         string      `json:"sql"`
	OK          bool        `json:"ok"`
	Error       string      `json:"error"`
	Tags        []string    `json:"tags"`
	Columns     []string    `json:"columns"`
	Types       []string    `json:"types"`
	Rows        [][]*string `json:"rows"`
	Reconnected bool        `json:"reconnected"`
}

// decode is Grafana's convertPostgresValue, printed as text.
func decode(m *pgtype.Map, fd pgconn.FieldDescription, raw []byte) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	var s string
	var err error
	switch fd.DataTypeOID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		s, err = scan(m, fd, raw, func(v int64) string { return strconv.FormatInt(v, 10) })
	case pgtype.NumericOID, pgtype.Float8OID, pgtype.Float4OID:
		s, err = scan(m, fd, raw, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) })
	case pgtype.BoolOID:
		s, err = scan(m, fd, raw, strconv.FormatBool)
	case pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.DateOID:
		s, err = scan(m, fd, raw, func(v time.Time) string { return v.UTC().Format(time.RFC3339Nano) })
	default:
		s, err = scan(m, fd, raw, func(v string) string { return v })
	}
	return &s, err
}

func scan[T any](m *pgtype.Map, fd pgconn.FieldDescription, raw []byte, text func(T) string) (string, error) {
	var v T
	err := m.Scan(fd.DataTypeOID, fd.Format, raw, &v)
	return text(v), err
}

// header sets the frame's fields from a SELECT result's, or checks they match (Grafana's
// convertResultsToFrame).
func header(o *out, m *pgtype.Map, fds []pgconn.FieldDescription) error {
	if o.Columns == nil {
		o.Columns, o.Types = []string{}, []string{}
		for _, fd := range fds {
			o.Columns = append(o.Columns, fd.Name)
			if t, ok := m.TypeForOID(fd.DataTypeOID); ok {
				o.Types = append(o.Types, t.Name)
			} else {
				o.Types = append(o.Types, fmt.Sprintf("oid:%d", fd.DataTypeOID))
			}
		}
	} else if len(fds) != len(o.Columns) {
		return fmt.Errorf("incompatible result structure: expected %d columns, got %d columns", len(o.Columns), len(fds))
	}
	for i, fd := range fds {
		if fd.Name != o.Columns[i] {
			return fmt.Errorf("column name mismatch at position %d: expected %q, got %q", i, o.Columns[i], fd.Name)
		}
	}
	return nil
}

func addRow(o *out, m *pgtype.Map, fds []pgconn.FieldDescription, raw [][]byte) error {
	row := make([]*string, len(fds))
	for i, fd := range fds {
		v, err := decode(m, fd, raw[i])
		if err != nil {
			return fmt.Errorf("convert frame from rows error: column %q: %w", fd.Name, err)
		}
		row[i] = v
	}
	o.Rows = append(o.Rows, row)
	return nil
}

func run(ctx context.Context, conn *pgx.Conn, c kase, o *out) error {
	m := conn.TypeMap()
	switch c.mode {
	case "ping":
		return conn.Ping(ctx)
	case "extended":
		rows, err := conn.Query(ctx, o.SQL, c.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := header(o, m, rows.FieldDescriptions()); err != nil {
			return err
		}
		for rows.Next() {
			if err := addRow(o, m, rows.FieldDescriptions(), rows.RawValues()); err != nil {
				return err
			}
		}
		o.Tags = []string{rows.CommandTag().String()}
		return rows.Err()
	}
	results, err := conn.PgConn().Exec(ctx, o.SQL).ReadAll()
	if err != nil {
		return err
	}
	o.Tags = []string{}
	for _, r := range results {
		o.Tags = append(o.Tags, r.CommandTag.String())
	}
	for _, r := range results {
		if !r.CommandTag.Select() {
			continue
		}
		if err := header(o, m, r.FieldDescriptions); err != nil {
			return err
		}
		for _, raw := range r.Rows {
			if err := addRow(o, m, r.FieldDescriptions, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

func main() {
	dsn := os.Args[1]
	enc := json.NewEncoder(os.Stdout)
	connect := func() *pgx.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			enc.Encode(out{Case: "connect", Error: err.Error()})
			os.Exit(1)
		}
		return conn
	}
	conn := connect()
	for _, c := range cases {
		// ts_timescaledb is a panel of a data source with the TimescaleDB toggle on.
		o := out{Case: c.name, Mode: c.mode, Format: c.format, SQL: expand(c.sql, c.name == "ts_timescaledb")}
		if conn.IsClosed() {
			conn, o.Reconnected = connect(), true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if err := run(ctx, conn, c, &o); err != nil {
			o.Error = err.Error()
		} else {
			o.OK = true
		}
		cancel()
		enc.Encode(o)
	}
	conn.Close(context.Background())
}
