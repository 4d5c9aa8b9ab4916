//! Times the phases of ingest separately (inflate alone, read+aggregate, pack, store), summed
//! over the files given, to see which one bounds the whole; each phase runs alone, one file at a
//! time, with wall and CPU time (CPU / wall = cores used).
//! `cargo run --release --example ingest_phases [--threads 1|2] DB FILE.csv.gz...`
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use cranwhales::day::Threads;
use cranwhales::progress::Silent;
use cranwhales::store::{PackedDay, Store};

/// Wall and process CPU seconds of one phase, summed over the files.
#[derive(Default)]
struct Phase {
    wall: f64,
    cpu: f64,
}

impl Phase {
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (t, c) = (Instant::now(), cpu_seconds());
        let out = f();
        self.wall += t.elapsed().as_secs_f64();
        self.cpu += cpu_seconds() - c;
        out
    }

    fn print(&self, name: &str) {
        println!(
            "{name:18} {:6.2} s wall {:6.2} s cpu ({:.2} cores)",
            self.wall,
            self.cpu,
            self.cpu / self.wall.max(1e-9)
        );
    }
}

/// User + system time of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn inflate(file: &Path) -> u64 {
    let f = std::io::BufReader::with_capacity(256 * 1024, std::fs::File::open(file).unwrap());
    let mut d = flate2::bufread::MultiGzDecoder::new(f);
    let mut buf = vec![0u8; 512 * 1024];
    let mut n = 0u64;
    loop {
        let k = d.read(&mut buf).unwrap();
        if k == 0 {
            return n;
        }
        n += k as u64;
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let threads = match args.iter().position(|a| a == "--threads") {
        Some(i) => {
            let n = args.remove(i + 1);
            args.remove(i);
            if n == "1" {
                Threads::One
            } else {
                Threads::Two
            }
        }
        None => Threads::Two,
    };
    let (db, files) = args
        .split_first()
        .expect("usage: [--threads 1|2] DB FILE...");
    let mut store = Store::open(Path::new(db)).unwrap();
    let [mut inflated, mut read, mut pack, mut write]: [Phase; 4] = Default::default();
    let (mut bytes, mut rows) = (0, 0);
    for file in files.iter().map(Path::new) {
        bytes += inflated.time(|| inflate(file));
        let day = read.time(|| cranwhales::ingest::read_day(file, None, threads, &Silent));
        let day = day.unwrap();
        rows += day.rows;
        let packed = pack.time(|| PackedDay::new(day, threads));
        write.time(|| store.replace_day(&packed, "bench").unwrap());
    }
    println!(
        "{} files, {} MB inflated, {rows} rows, {threads:?}",
        files.len(),
        bytes >> 20
    );
    inflated.print("inflate only (zlib)");
    read.print("read + aggregate");
    pack.print("pack");
    write.print("store");
}
