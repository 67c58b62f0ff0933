// A Rust program with known names for tests/names.sh: its functions carry
// a hash in the legacy mangling (t::count_words::h...) and $-escapes
// (closures, trait impls, vtable shims), and std's generic code is inlined
// into them (String::push_str, HashMap::entry...).  Built by the test with
// Debian's rustc, once per mangling (legacy and v0).
use std::collections::HashMap;

trait Score {
    fn score(&self, n: u64) -> u64;
}

struct Weight {
    k: u64,
}

impl Score for Weight {
    #[inline(never)]
    fn score(&self, n: u64) -> u64 {
        let mut s = self.k;
        for i in 0..n {
            s = s.wrapping_mul(31).wrapping_add(i);
        }
        s
    }
}

#[inline(never)]
fn count_words(text: &str) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for w in text.split_whitespace() {
        let mut s = String::new();
        s.push_str(w);
        *m.entry(s).or_insert(0) += 1;
    }
    m
}

fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let w: Box<dyn Score> = Box::new(Weight { k: 3 });
    let text = "alpha beta gamma delta alpha beta ".repeat(1000);
    let total: u64 = (0..rounds)
        .map(|_| count_words(&text).len() as u64 + w.score(2000))
        .fold(0, |a, b| a.wrapping_add(b));
    println!("{}", total);
}
