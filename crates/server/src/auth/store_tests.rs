use super::*;

fn grant(name: &str, admin: bool) -> Grant {
    Grant::parse(name, "db1", "", admin).unwrap()
}

#[test]
fn names_are_checked() {
    let long = "a".repeat(MAX_NAME + 1);
    for (name, ok) in [
        ("grafana", true),
        ("ci-01.prod_x", true),
        ("", false),
        ("../etc", false),
        ("a/b", false),
        ("a\0b", false),
        ("-lead", false),
        ("grаfana", false), // Cyrillic а: a look-alike
        (long.as_str(), false),
    ] {
        assert_eq!(validate_name(name).is_ok(), ok, "{name:?}");
    }
}

#[test]
fn the_file_round_trips_and_damage_is_named() {
    let t = Stored {
        grant: grant("grafana", false),
        hash: token::hash("tmp_x"),
        scram: crate::auth::scram::Verifier::new("tmp_x", b"salt", 4096),
        created_ns: 7,
    };
    let bytes = encode(std::slice::from_ref(&t));
    assert_eq!(decode(&bytes).unwrap(), vec![t.clone()]);
    let mut flipped = bytes.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 1;
    let mut version = bytes.clone();
    version[8] = 9;
    let twice = {
        let body = serde_json::to_vec(&vec![t.clone(), t.clone()]).unwrap();
        let mut b = bytes[..8].to_vec();
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&(body.len() as u32).to_le_bytes());
        b.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        b.extend_from_slice(&body);
        b
    };
    for (name, b, want) in [
        ("empty", Vec::new(), "torn"),
        ("header only, torn", bytes[..10].to_vec(), "torn"),
        ("body torn", bytes[..bytes.len() - 3].to_vec(), "torn"),
        ("a flipped bit", flipped, "checksum"),
        ("another version", version, "format version 9"),
        (
            "bad magic",
            b"NOTTOKENS-and-more-bytes".to_vec(),
            "bad magic",
        ),
        ("a name twice", twice, "stored twice"),
    ] {
        let e = decode(&b).unwrap_err();
        assert!(e.contains(want), "{name}: {e}");
    }
}

#[test]
fn tokens_are_made_found_revoked_and_seen_by_another_store() {
    let dir = tempfile::tempdir().unwrap();
    let a = TokenStore::open(dir.path()).unwrap();
    let b = TokenStore::open(dir.path()).unwrap();
    assert!(!a.has_admin());
    let secret = a.create(grant("grafana", false), 1).unwrap();
    assert!(secret.0.starts_with("tmp_"));
    let on_disk = std::fs::read(a.path()).unwrap();
    assert!(
        !String::from_utf8_lossy(&on_disk).contains(&secret.0),
        "the token itself is never stored"
    );
    assert_eq!(
        a.authenticate(&secret.0).map(|g| g.name),
        Some("grafana".into())
    );
    assert_eq!(a.authenticate("tmp_wrong"), None);
    assert_eq!(
        b.authenticate(&secret.0).map(|g| g.name),
        Some("grafana".into()),
        "another process's store sees the new token"
    );
    assert_eq!(
        a.create(grant("grafana", true), 2).unwrap_err(),
        StoreError::Duplicate("grafana".into())
    );
    assert!(matches!(
        a.create(grant("../x", true), 2).unwrap_err(),
        StoreError::Invalid(_)
    ));
    let admin = b.create(grant("ops", true), 3).unwrap();
    assert!(a.has_admin(), "a sees b's admin token");
    let v = a.scram("ops").unwrap();
    assert_eq!(
        v,
        crate::auth::scram::Verifier::new(&admin.0, &v.salt, v.iterations),
        "the verifier is the token's"
    );
    assert!(b.revoke("grafana").unwrap());
    assert!(!b.revoke("grafana").unwrap());
    assert_eq!(
        a.authenticate(&secret.0),
        None,
        "a revocation by another store takes effect at once"
    );
    assert_eq!(a.grant("grafana"), None);
    let names: Vec<String> = TokenStore::open(dir.path())
        .unwrap()
        .list()
        .into_iter()
        .map(|t| t.grant.name)
        .collect();
    assert_eq!(names, ["ops"], "survives a reopen");
}

#[test]
fn a_damaged_catalog_is_refused_by_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokens"), b"TMPRTOKN\x01\0\0\0").unwrap();
    let e = TokenStore::open(dir.path()).err().unwrap().to_string();
    assert!(e.contains("tokens") && e.contains("torn"), "{e}");
}
