use super::*;

fn dl(
    time: &str,
    package: &str,
    version: Option<&str>,
    size: u64,
    country: Option<&str>,
) -> Download {
    Download {
        time: time.into(),
        package: package.into(),
        version: version.map(Into::into),
        size,
        r_version: Some("3.1.2".into()),
        r_arch: Some("x86_64".into()),
        r_os: (size % 2 == 0).then(|| "mingw32".into()),
        country: country.map(Into::into),
    }
}

fn sample() -> Vec<(u64, Vec<Download>)> {
    vec![
        (
            17,
            vec![
                dl("00:00:05", "Rcpp", Some("0.12.2"), 1 << 40, Some("US")),
                dl("00:00:01", "ggplot2", None, 0, None),
                dl("23:59:59", "Rcpp", Some("0.12.2"), 1 << 40, Some("US")),
                dl("24:00:00", "\u{e9}t\u{e9}", Some(""), 17, Some("NA")),
                dl("12:00:00", "Rcpp", Some("0.12.2"), 999, Some("US")),
            ],
        ),
        (
            3,
            vec![dl("01:02:03", "Rcpp", Some("0.12.3"), 5, Some("DE"))],
        ),
        (u64::MAX, Vec::new()),
    ]
}

#[test]
fn every_whale_round_trips_in_its_order() {
    let whales = sample();
    let blob = encode_downloads(&whales);
    assert_eq!(
        super::whales(&blob).unwrap(),
        vec![(17, 5), (3, 1), (u64::MAX, 0)]
    );
    for (ip, want) in &whales {
        assert_eq!(&unpack_whale(&blob, *ip).unwrap().unwrap(), want);
    }
    assert_eq!(unpack_whale(&blob, 4), Some(None));
    assert_eq!(unpack_all(&blob).unwrap(), whales);
}

#[test]
fn malformed_blobs_are_none_not_panics() {
    let blob = encode_downloads(&sample());
    for cut in 0..blob.len() {
        assert!(unpack_whale(&blob[..cut], 17).is_none(), "cut at {cut}");
    }
    let mut extra = blob.clone();
    extra.push(0);
    assert!(unpack_whale(&extra, 17).is_none());
    // A corrupt byte anywhere: an error or other rows, never a panic.
    for at in 4..blob.len() {
        let mut bad = blob.clone();
        bad[at] ^= 0x5a;
        let _ = unpack_whale(&bad, 17);
    }
}

#[test]
fn format_3_reads_the_same_rows_as_format_4() {
    let whales = sample();
    let (v3, v4) = (encode_downloads_v3(&whales), encode_downloads(&whales));
    assert_eq!(&v3[..4], &FORMAT3.to_le_bytes());
    assert_eq!(&v4[..4], &columns::FORMAT4.to_le_bytes());
    assert_eq!(unpack_all(&v3).unwrap(), whales);
    assert_eq!(super::whales(&v3), super::whales(&v4));
    for (ip, want) in &whales {
        assert_eq!(&unpack_whale(&v3, *ip).unwrap().unwrap(), want);
    }
    let empty = encode_downloads(&[]);
    assert_eq!(unpack_all(&empty).unwrap(), Vec::new());
}
