//! Parse and translation tables: the statements Grafana's InfluxDB data source and the
//! `influx` CLI send, and the SQL each becomes.

use super::ast::*;
use super::parse;
use super::translate::{Columns, select};

const NOW: i64 = 1_700_003_600_000_000_000; // 2023-11-14T23:13:20Z

fn cpu() -> Columns {
    Columns {
        tags: vec!["host".into(), "region".into()],
        fields: vec![
            ("usage".into(), "float".into()),
            ("idle".into(), "float".into()),
        ],
    }
}

fn sel(q: &str) -> Select {
    match parse(q).unwrap_or_else(|e| panic!("{q}: {e}")).remove(0) {
        Statement::Select(s) => *s,
        other => panic!("{q}: {other:?}"),
    }
}

#[test]
fn grafana_queries_translate() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "the default Grafana query",
            r#"SELECT mean("usage") FROM "cpu" WHERE ("host" =~ /^a$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(1m), "host" fill(null)"#,
            r#"SELECT "host" AS "__tag0", "time", avg("usage") AS "mean" FROM "cpu" WHERE (("host" ~ '^a$' AND "time" >= '2023-11-14T22:13:20.000000000Z') AND "time" <= '2023-11-14T23:13:20.000000000Z') SAMPLE BY 60000000000ns FILL(NULL) ORDER BY "__tag0" NULLS FIRST, "time""#,
            &["host"],
        ),
        (
            "now() relative, fill(none), two aggregates, duplicate names",
            "SELECT max(usage), max(idle), count(usage) FROM cpu WHERE time > now() - 1h GROUP BY time(10s) fill(none)",
            r#"SELECT "time", max("usage") AS "max", max("idle") AS "max_1", count("usage") AS "count" FROM "cpu" WHERE "time" > '2023-11-14T22:13:20.000000000Z' AND "time" <= '2023-11-14T23:13:20.000000000Z' SAMPLE BY 10000000000ns FILL(NONE) ORDER BY "time""#,
            &[],
        ),
        (
            "raw points, a missing tag equals '', newest first, ties in series-key order",
            "SELECT usage FROM cpu WHERE region = '' AND host != 'b' ORDER BY time DESC LIMIT 5",
            r#"SELECT "time", "usage" AS "usage" FROM "cpu" WHERE (("region" = '' OR "region" IS NULL) AND ("host" <> 'b' OR "host" IS NULL)) AND ("usage" IS NOT NULL) ORDER BY "time" DESC, "host" NULLS LAST, "region" NULLS LAST LIMIT 5"#,
            &[],
        ),
        (
            "arithmetic over an aggregate at any depth (Grafana's math), fill(previous)",
            "SELECT mean(\"usage\") * 2 + 1 AS \"x\" FROM \"cpu\" WHERE time >= 1700000000000ms and time <= 1700003599999ms GROUP BY time(30s) fill(previous)",
            r#"SELECT "time", ((avg("usage") * 2) + 1) AS "x" FROM "cpu" WHERE ("time" >= '2023-11-14T22:13:20.000000000Z' AND "time" <= '2023-11-14T23:13:19.999000000Z') SAMPLE BY 30000000000ns FILL(PREV) ORDER BY "time""#,
            &[],
        ),
        (
            "TSBS lastpoint: the newest point of each host as DISTINCT ON; every field selected, no filter",
            "SELECT * from cpu group by \"host\" order by time desc limit 1",
            r#"SELECT DISTINCT ON ("host") "host" AS "__tag0", "time", "idle" AS "idle", "region" AS "region", "usage" AS "usage" FROM "cpu" ORDER BY "host" NULLS FIRST, "time" DESC"#,
            &["host"],
        ),
        (
            "raw points, two per series after one, numbered in SQL",
            "SELECT usage FROM cpu GROUP BY host LIMIT 2 OFFSET 1",
            r#"SELECT "__tag0", "time", "usage" FROM (SELECT "host" AS "__tag0", "time", "usage" AS "usage", row_number() OVER (PARTITION BY "host" ORDER BY "time") AS "__rn" FROM "cpu" WHERE ("usage" IS NOT NULL)) AS "__points" WHERE "__rn" > 1 AND "__rn" <= 3 ORDER BY "__tag0" NULLS FIRST, "time""#,
            &["host"],
        ),
        (
            "GROUP BY * and an aggregate without time: grouped by every tag",
            "SELECT last(usage) FROM cpu WHERE time >= '2023-11-14T00:00:00Z' GROUP BY *",
            r#"SELECT "host" AS "__tag0", "region" AS "__tag1", max("time") FILTER (WHERE "usage" IS NOT NULL) AS "time", last("usage") AS "last" FROM "cpu" WHERE "time" >= '2023-11-14T00:00:00.000000000Z' GROUP BY "__tag0", "__tag1" ORDER BY "__tag0" NULLS FIRST, "__tag1" NULLS FIRST"#,
            &["host", "region"],
        ),
        (
            "an unknown field reads NULL; arithmetic and spread",
            "SELECT spread(usage) * 2 AS s, mean(nope) FROM cpu GROUP BY time(1h) fill(previous)",
            r#"SELECT "time", ((max("usage") - min("usage")) * 2) AS "s", avg(NULL) AS "mean" FROM "cpu" WHERE "time" <= '2023-11-14T23:13:20.000000000Z' SAMPLE BY 3600000000000ns FILL(PREV) ORDER BY "time""#,
            &[],
        ),
    ];
    for (name, q, want, tags) in cases {
        let t = select(&sel(q), "cpu", &cpu(), NOW).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.sql, *want, "{name}");
        assert_eq!(t.group_tags, *tags, "{name}");
    }
}

#[test]
fn refusals_read_as_influxdb_s() {
    for (q, want) in [
        (
            "SELECT usage, mean(idle) FROM cpu",
            "mixing aggregate and non-aggregate",
        ),
        (
            "SELECT usage FROM cpu GROUP BY time(1m)",
            "GROUP BY requires at least one aggregate",
        ),
        ("SELECT mode(usage) FROM cpu", "mode() is not supported yet"),
        (
            "SELECT mean(usage, idle) FROM cpu",
            "invalid number of arguments for mean",
        ),
        (
            "SELECT usage FROM cpu WHERE time > 'yesterday'",
            "invalid time \"yesterday\"",
        ),
        ("SELECT usage FROM cpu WHERE host =~ /(/", "invalid regex"),
        // Found by the fuzzer: the left side is written twice in the SQL, so a chain of
        // matches doubled the text at each level (1.5 KB of InfluxQL gave 9.7 MB of SQL).
        (
            "SELECT usage FROM cpu WHERE host =~ /a/ =~ /b/",
            "=~ needs a tag or field on its left",
        ),
        (
            "SELECT usage FROM cpu WHERE (1 + 2) !~ /b/",
            "!~ needs a tag or field on its left",
        ),
    ] {
        let e = select(&sel(q), "cpu", &cpu(), NOW).unwrap_err();
        assert!(e.contains(want), "{q}: {e}");
    }
    for (q, want) in [
        ("SELECT FROM cpu", "found FROM, expected identifier"),
        ("SELECT a FROM cpu GROUP BY time(0s)", "must be positive"),
        ("SELECT a FROM cpu WHERE a = 'x", "unterminated '"),
        ("SELECT a FROM cpu LIMIT -1", "expected integer"),
        ("SELECT a FROM cpu tz('Europe/Paris')", "only UTC"),
    ] {
        let e = parse(q).unwrap_err();
        assert!(
            e.contains(want) && e.starts_with("error parsing query"),
            "{q}: {e}"
        );
    }
    let deep = format!(
        "SELECT a FROM m WHERE {}1{}",
        "(".repeat(100),
        ")".repeat(100)
    );
    assert!(parse(&deep).unwrap_err().contains("nest deeper"));
    // Long operator chains and unary minus runs build deep trees without parentheses.
    for q in [
        format!("SELECT {}1 FROM m", "- ".repeat(200_000)),
        format!(
            "SELECT a FROM m WHERE {}",
            vec!["a = 1"; 200_000].join(" OR ")
        ),
        format!("SELECT {} FROM m", vec!["a"; 200_000].join(" + ")),
    ] {
        assert!(parse(&q).unwrap_err().contains("more than 256 operators"));
    }
    let at_limit = format!("SELECT {} FROM m", vec!["a"; 257].join(" + "));
    assert!(parse(&at_limit).is_ok());
}

#[test]
fn statements_split_and_show_forms() {
    let all = parse(
        "SHOW DATABASES; SHOW MEASUREMENTS WITH MEASUREMENT =~ /c.u;/ LIMIT 10; \
         SHOW TAG KEYS FROM \"cpu\"; SHOW TAG VALUES ON db FROM cpu WITH KEY IN (host, region) WHERE region = 'x;y'; \
         SHOW FIELD KEYS ON db; SHOW SERIES FROM /./; SHOW RETENTION POLICIES ON \"db\"; \
         CREATE DATABASE \"a;b\"",
    )
    .unwrap();
    assert_eq!(all.len(), 8, "{all:?}");
    assert_eq!(all[0], Statement::Other("SHOW DATABASES".into()));
    assert_eq!(
        all[1],
        Statement::ShowMeasurements {
            db: None,
            regex: Some("c.u;".into()),
            page: Page {
                limit: Some(10),
                offset: 0
            }
        }
    );
    assert!(
        matches!(&all[3], Statement::ShowTagValues { db: Some(d), key: KeyMatch::In(k), condition: Some(_), .. } if d == "db" && k.len() == 2)
    );
    assert!(
        matches!(&all[5], Statement::ShowSeries { from: Some(Source::Regex(r)), .. } if r == ".")
    );
    assert_eq!(
        all[6],
        Statement::Other("SHOW RETENTION POLICIES ON \"db\"".into())
    );
    assert_eq!(all[7], Statement::Other("CREATE DATABASE \"a;b\"".into()));
    // LIMIT and OFFSET of every SHOW form; LIMIT 0 is no limit, as in InfluxDB.
    let page_of = |q: &str| match parse(q).unwrap().remove(0) {
        Statement::ShowMeasurements { page, .. }
        | Statement::ShowTagKeys { page, .. }
        | Statement::ShowFieldKeys { page, .. }
        | Statement::ShowTagValues { page, .. }
        | Statement::ShowSeries { page, .. } => page,
        other => panic!("{q}: {other:?}"),
    };
    for (q, limit, offset) in [
        ("SHOW MEASUREMENTS LIMIT 5 OFFSET 2", Some(5), 2),
        ("SHOW MEASUREMENTS OFFSET 3", None, 3),
        ("SHOW MEASUREMENTS LIMIT 0", None, 0),
        ("SHOW TAG KEYS FROM cpu LIMIT 1 OFFSET 1", Some(1), 1),
        ("SHOW FIELD KEYS FROM cpu LIMIT 2", Some(2), 0),
        (
            "SHOW TAG VALUES WITH KEY = host LIMIT 10 OFFSET 20",
            Some(10),
            20,
        ),
        ("SHOW SERIES WHERE host = 'a' LIMIT 0 OFFSET 4", None, 4),
    ] {
        assert_eq!(page_of(q), Page { limit, offset }, "{q}");
    }
    let p = Page {
        limit: Some(2),
        offset: 1,
    };
    assert_eq!(p.cut([1, 2, 3, 4]), [2, 3]);
    assert_eq!(Page::default().cut([1, 2]), [1, 2]);
    assert!(
        Page {
            limit: None,
            offset: u64::MAX
        }
        .cut([1])
        .is_empty()
    );
    // A SELECT's LIMIT 0 and SLIMIT 0 are none; SOFFSET is kept.
    let s = sel("SELECT usage FROM cpu GROUP BY host LIMIT 0 SLIMIT 0 SOFFSET 2");
    assert_eq!((s.limit, s.slimit, s.soffset), (None, None, Some(2)));
    // Qualified sources.
    let s = sel("SELECT * FROM \"db\".\"autogen\".\"cpu\", db..mem, /^disk/");
    assert_eq!(
        s.from,
        vec![
            Source::Name {
                db: Some("db".into()),
                name: "cpu".into()
            },
            Source::Name {
                db: Some("db".into()),
                name: "mem".into()
            },
            Source::Regex("^disk".into()),
        ]
    );
}

#[test]
fn derivatives() {
    use super::translate::{Transform, derivative, time_literal};
    let q = "SELECT non_negative_derivative(max(usage), 1s) AS rate FROM cpu WHERE time > now() - 1h GROUP BY time(1m)";
    let t = select(&sel(q), "cpu", &cpu(), NOW).unwrap();
    assert!(t.sql.contains(r#"max("usage") AS "rate""#), "{}", t.sql);
    // The range is read from one bucket earlier (so its first bucket has a rate), and the
    // earlier bucket is not reported.
    let hour_ago = NOW - 3_600_000_000_000;
    assert!(
        t.sql
            .contains(r#""time" > '2023-11-14T22:12:20.000000000Z'"#),
        "{}",
        t.sql
    );
    let minute = 60_000_000_000;
    assert_eq!(
        t.drop_before,
        Some(hour_ago / minute * minute),
        "its bucket's start"
    );
    // LIMIT counts the reported points, so it is applied after the earlier bucket is cut.
    let limited = format!("{q} LIMIT 10 OFFSET 1");
    let t = select(&sel(&limited), "cpu", &cpu(), NOW).unwrap();
    assert!(!t.sql.contains("LIMIT"), "{}", t.sql);
    assert_eq!(t.series_limit, Some((10, 1)));
    // Every field named but one read twice: the any-field filter stays.
    let twice = select(
        &sel("SELECT usage, usage AS idle FROM cpu"),
        "cpu",
        &cpu(),
        NOW,
    )
    .unwrap();
    assert!(twice.sql.contains("IS NOT NULL"), "{}", twice.sql);
    let plain = "SELECT max(usage) FROM cpu WHERE time > now() - 1h GROUP BY time(1m)";
    assert_eq!(
        select(&sel(plain), "cpu", &cpu(), NOW).unwrap().drop_before,
        None
    );
    assert_eq!(t.columns, ["rate"]);
    assert_eq!(
        t.transforms,
        [Some(Transform {
            unit_ns: 1_000_000_000,
            non_negative: true,
            descending: false,
        })]
    );
    let s = 1_000_000_000;
    let points = [
        (0, Some(10.0)),
        (60 * s, Some(70.0)),
        (120 * s, None),
        (180 * s, Some(10.0)),
        (240 * s, Some(40.0)),
    ];
    let nn = Transform {
        unit_ns: s,
        non_negative: true,
        descending: false,
    };
    assert_eq!(
        derivative(&points, nn),
        [None, Some(1.0), None, None, Some(0.5)]
    );
    let d = Transform {
        unit_ns: 60 * s,
        non_negative: false,
        descending: false,
    };
    assert_eq!(
        derivative(&points, d),
        [None, Some(60.0), None, Some(-30.0), Some(30.0)]
    );
    // In descending order each rate is from the later bucket, reported at the earlier one:
    // the same magnitudes with the sign turned (InfluxDB's), and non_negative keeps the falls.
    let mut desc = points;
    desc.reverse();
    let dd = Transform {
        descending: true,
        ..d
    };
    assert_eq!(
        derivative(&desc, dd),
        [None, Some(-30.0), None, Some(30.0), Some(-60.0)]
    );
    assert_eq!(
        derivative(
            &desc,
            Transform {
                non_negative: true,
                ..dd
            }
        ),
        [None, None, None, Some(30.0), None]
    );
    // Points out of the reported order have no rate.
    assert_eq!(derivative(&points, dd), [None; 5]);
    // Descending, the range is read to one bucket after its end, and buckets after the
    // bucket holding its last instant are not reported.
    let t = select(&sel(&format!("{q} ORDER BY time DESC")), "cpu", &cpu(), NOW).unwrap();
    let minute = 60 * s;
    assert!(
        t.sql
            .contains(&format!("\"time\" > {}", time_literal(hour_ago)))
            && t.sql
                .contains(&format!("\"time\" <= {}", time_literal(NOW + minute))),
        "{}",
        t.sql
    );
    assert_eq!(
        (t.drop_before, t.drop_after),
        (None, Some(NOW.div_euclid(minute) * minute))
    );
    assert_eq!(t.transforms[0].map(|t| t.descending), Some(true));
    let bounded = "SELECT derivative(max(usage), 1m) FROM cpu WHERE time >= 0s AND time < 600s GROUP BY time(1m) ORDER BY time DESC";
    let t = select(&sel(bounded), "cpu", &cpu(), NOW).unwrap();
    assert!(
        t.sql
            .contains(&format!("\"time\" < {}", time_literal(660 * s))),
        "{}",
        t.sql
    );
    assert_eq!(t.drop_after, Some(540 * s), "the bucket of 599.999999999 s");
    for (q, want) in [
        (
            "SELECT derivative(usage) FROM cpu",
            "raw field is not supported yet",
        ),
        (
            "SELECT derivative(mean(usage)) FROM cpu",
            "requires a GROUP BY time",
        ),
        (
            "SELECT derivative(mean(usage), 0s) FROM cpu GROUP BY time(1m)",
            "positive duration",
        ),
    ] {
        let e = select(&sel(q), "cpu", &cpu(), NOW).unwrap_err();
        assert!(e.contains(want), "{q}: {e}");
    }
}

/// A missing tag reads as '' in every comparison, as in InfluxDB.
#[test]
fn missing_tags_compare_as_empty() {
    for (cond, want) in [
        ("host = ''", r#"("host" = '' OR "host" IS NULL)"#),
        ("host != ''", r#""host" <> ''"#),
        ("host != 'a'", r#"("host" <> 'a' OR "host" IS NULL)"#),
        ("host =~ /^$/", r#"("host" ~ '^$' OR "host" IS NULL)"#),
        ("host =~ /a/", r#""host" ~ 'a'"#),
        ("host !~ /^$/", r#""host" !~ '^$'"#),
        ("host !~ /a/", r#"("host" !~ 'a' OR "host" IS NULL)"#),
    ] {
        let q = format!("SELECT usage FROM cpu WHERE {cond}");
        let t = select(&sel(&q), "cpu", &cpu(), NOW).unwrap();
        assert!(
            t.sql.contains(&format!("WHERE {want} AND")),
            "{cond}: {}",
            t.sql
        );
    }
}
