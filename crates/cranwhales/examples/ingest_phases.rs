//! Times the phases of one ingest separately (inflate alone, read+aggregate, store) to see
//! which one bounds the whole. `cargo run --release --example ingest_phases FILE.csv.gz DB`
use std::io::Read;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (file, db) = (
        std::path::Path::new(&args[1]),
        std::path::Path::new(&args[2]),
    );
    let t = Instant::now();
    let f = std::io::BufReader::with_capacity(256 * 1024, std::fs::File::open(file).unwrap());
    let mut d = flate2::bufread::MultiGzDecoder::new(f);
    let mut buf = vec![0u8; 512 * 1024];
    let mut n = 0u64;
    loop {
        let k = d.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    println!(
        "inflate only: {:.2} s ({} MB)",
        t.elapsed().as_secs_f64(),
        n >> 20
    );
    let t = Instant::now();
    let day = cranwhales::ingest::read_day(file, None, &cranwhales::progress::Silent).unwrap();
    println!(
        "read + aggregate: {:.2} s ({} rows)",
        t.elapsed().as_secs_f64(),
        day.rows
    );
    let t = Instant::now();
    let mut store = cranwhales::store::Store::open(db).unwrap();
    store.replace_day(&day, "bench").unwrap();
    println!(
        "store: {:.2} s ({} whale rows)",
        t.elapsed().as_secs_f64(),
        day.whale_row_count()
    );
}
