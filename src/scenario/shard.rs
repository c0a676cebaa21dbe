//! Splitting a matrix across machines (`--shard i/n`): which cells a
//! shard measures, from nothing but each cell's stable label, so any job
//! runner (a Slurm array, a Kubernetes indexed job) can run the parts and
//! the result databases merge; and a load's part of the clients and
//! requests when a load is split the same way (`load --shard i/n`).

use std::fmt;
use std::str::FromStr;

/// One part of a matrix split across machines (`--shard i/n`): the cells
/// whose stable label hashes to `index - 1` modulo `count`. A cell's shard
/// depends on nothing but its label (never on the order of the matrix, the
/// other cells or the process), so a retried shard redoes exactly its cells
/// and the shards of one matrix together hold each cell once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based: `--shard 1/3` is the first of three.
    pub index: u64,
    pub count: u64,
}

/// Parses "i/n" with 1 <= i <= n (`--shard 2/8`).
impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("a shard is i/n with 1 <= i <= n (e.g. 2/8), not '{text}'");
        let (index, count) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: u64 = index.trim().parse().map_err(|_| bad())?;
        let count: u64 = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }
}

impl Shard {
    /// Returns true if and only if the cell with this stable label belongs
    /// to this shard.
    pub fn contains(&self, label: &str) -> bool {
        shard_hash(label) % self.count == self.index - 1
    }

    /// The items of a list whose label belongs to the shard, and the
    /// reference rows (`is_reference`: a baseline the other rows are divided
    /// by) whichever shard owns them, in their order; every item without a
    /// shard. A reference row is measured in every shard because a ratio
    /// comes from same-round pairs within one run: each shard's rows keep
    /// their ratio to it. Its owning shard is still the one its label hashes to.
    pub fn filter<T>(
        shard: Option<Self>,
        items: Vec<T>,
        label: impl Fn(&T) -> String,
        is_reference: impl Fn(&T) -> bool,
    ) -> Vec<T> {
        match shard {
            Some(shard) => items
                .into_iter()
                .filter(|item| shard.contains(&label(item)) || is_reference(item))
                .collect(),
            None => items,
        }
    }

    /// This shard's part of `total` whole things split across the shards
    /// (a load's clients or its bound on requests): the quotient, and one
    /// more for each of the first `total mod count` shards, so the parts add
    /// up to `total` and differ by one at most.
    pub fn share(&self, total: usize) -> usize {
        let count = self.count as usize;
        total / count + usize::from((self.index as usize) <= total % count)
    }

    /// Returns true if and only if the shard holds a cell of its own (not
    /// only reference rows) among these labels.
    pub fn owns_any<'a>(&self, mut labels: impl Iterator<Item = String> + 'a) -> bool {
        labels.any(|label| self.contains(&label))
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Stored in a run's options as "i/n".
impl serde::Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read back from "i/n".
impl<'de> serde::Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The hash a cell's shard is taken from: FNV-1a of the label, then the
/// 64-bit finaliser of MurmurHash3 (Appleby, public domain) so that every
/// bit of the label reaches the low bits. FNV-1a alone spreads labels that
/// differ in a few characters badly modulo small numbers: the 12 rows of a
/// 2 x 3 x 2 matrix fell 10, 2 and 0 into three shards.
pub fn shard_hash(label: &str) -> u64 {
    let mut hash = fnv1a_64(label.as_bytes());
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// The 64-bit FNV-1a hash (Fowler, Noll, Vo): fixed, unseeded and the same
/// on every machine and build, unlike `std`'s randomly seeded hasher, which
/// would put a cell in a different shard in each process.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn bad_shards_are_refused_saying_the_form() {
        for text in ["0/3", "4/3", "1/0", "x", "1/", "/3", "-1/3", "1/3/4", ""] {
            let error = text.parse::<Shard>().expect_err(text);
            assert!(error.contains("i/n with 1 <= i <= n"), "{text}: {error}");
        }
        assert_eq!(" 2/3 ".parse(), Ok(Shard { index: 2, count: 3 }));
        assert_eq!("1/1".parse::<Shard>().unwrap().to_string(), "1/1");
    }

    #[test]
    fn the_shares_add_up_to_the_whole_and_differ_by_one_at_most() {
        for (total, count) in [(64, 2), (7, 3), (1_000_000, 7), (3, 3), (2, 5)] {
            let shares: Vec<usize> = (1..=count)
                .map(|index| Shard { index, count }.share(total))
                .collect();
            assert_eq!(shares.iter().sum::<usize>(), total, "{total}/{count}");
            let (least, most) = (shares.iter().min(), shares.iter().max());
            assert!(most.unwrap() - least.unwrap() <= 1, "{shares:?}");
        }
    }

    #[test]
    fn a_small_matrix_reaches_every_shard() {
        let mut labels = Vec::new();
        for version in ["1.2", "1.3"] {
            for group in ["x25519", "p256", "x448"] {
                for cert in ["rsa2048", "ecdsa_p256"] {
                    labels.push(format!("handshake_{version}_{group}_{cert}_aes128gcm"));
                }
            }
        }
        for index in 1..=3 {
            let shard = Some(Shard { index, count: 3 });
            let part = Shard::filter(shard, labels.clone(), Clone::clone, |_| false);
            assert!((2..=6).contains(&part.len()), "{index}/3: {part:?}");
        }
    }

    #[test]
    fn a_reference_row_is_in_every_shard() {
        let labels: Vec<String> = (0..50).map(|i| format!("row_{i}")).collect();
        for index in 1..=4 {
            let shard = Shard { index, count: 4 };
            let part = Shard::filter(Some(shard), labels.clone(), Clone::clone, |l| l == "row_7");
            assert!(part.contains(&"row_7".to_string()));
            let owned = part.iter().filter(|l| shard.contains(l)).count();
            assert_eq!(owned + usize::from(!shard.contains("row_7")), part.len());
        }
    }

    #[test]
    fn the_shards_partition_any_list() {
        let labels: Vec<String> = (0..200).map(|i| format!("handshake_row_{i}")).collect();
        for count in 1..=7 {
            let mut seen = Vec::new();
            for index in 1..=count {
                let shard = Some(Shard { index, count });
                seen.extend(Shard::filter(shard, labels.clone(), Clone::clone, |_| {
                    false
                }));
            }
            seen.sort();
            let mut all = labels.clone();
            all.sort();
            assert_eq!(seen, all, "{count} shards");
        }
    }
}
