//! `pools`: several providers (keys or deployments of one model) used as one. A pool id
//! stands for its members wherever an item names a provider; the engine picks a member
//! when a call starts.
//!
//! [`Pools`] keeps "each pool has at least one member, no member is listed twice or in
//! two pools, and no pool id is a member": it is made only by [`Pools::parse`].

use crate::display::js_string;
use crate::options::{OptionValue, OptionsError};

/// The pools, in the order they were given: each pool id with its members.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pools {
    pools: Vec<(String, Vec<String>)>,
}

impl Pools {
    /// The members of pool `id`, or `None` when `id` is no pool.
    pub fn members(&self, id: &str) -> Option<&[String]> {
        (self.pools.iter())
            .find(|(pool, _)| pool == id)
            .map(|(_, members)| members.as_slice())
    }

    /// Whether no pool is set.
    pub fn is_empty(&self) -> bool {
        self.pools.is_empty()
    }

    /// Each pool id with its members.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        (self.pools.iter()).map(|(pool, members)| (pool.as_str(), members.as_slice()))
    }

    /// The pools as an option value (for `pacer.options`).
    pub fn to_value(&self) -> OptionValue {
        let text = |m: &String| OptionValue::Text(m.clone());
        let pools = self.pools.iter();
        OptionValue::Map(
            pools
                .map(|(pool, members)| {
                    (
                        pool.clone(),
                        OptionValue::List(members.iter().map(text).collect()),
                    )
                })
                .collect(),
        )
    }

    /// Reads option `name` (`pools`): an object mapping each pool id to an array of
    /// non-empty providerIds. An error names the pool it is about (`pools.<id>`).
    #[cfg_attr(cold_for_size, optimize(size), inline(never))]
    pub fn parse(name: &str, value: &OptionValue) -> Result<Pools, OptionsError> {
        let OptionValue::Map(entries) = value else {
            return Err(OptionsError {
                option: name.to_owned(),
                message: format!(
                    "{name} must be an object mapping a pool id to an array of providerIds (got {value})"
                ),
            });
        };
        let mut pools: Vec<(String, Vec<String>)> = Vec::with_capacity(entries.len());
        for (pool, members) in entries {
            let at = format!("{name}.{pool}");
            let fail = |message: String| OptionsError {
                option: at.clone(),
                message: format!("{at} {message}"),
            };
            if pool.is_empty() {
                return Err(fail(String::from("must be a non-empty pool id")));
            }
            let list = match members {
                OptionValue::List(list) => list,
                other => {
                    return Err(fail(format!(
                        "must be an array of non-empty providerId strings (got {other})"
                    )))
                }
            };
            if list.is_empty() {
                return Err(fail(String::from("must have at least one member (got [])")));
            }
            let mut names: Vec<String> = Vec::with_capacity(list.len());
            for member in list {
                let member = match member {
                    OptionValue::Text(m) if !m.is_empty() => m,
                    other => {
                        return Err(fail(format!(
                            "must be an array of non-empty providerId strings (got {other} in it)"
                        )))
                    }
                };
                if names.contains(member) {
                    return Err(fail(format!(
                        "must not list a member twice (got {} twice)",
                        js_string(member)
                    )));
                }
                if member == pool {
                    return Err(fail(format!(
                        "must not list its own pool id as a member (got {})",
                        js_string(member)
                    )));
                }
                names.push(member.clone());
            }
            pools.push((pool.clone(), names));
        }
        // Across pools: a member of two pools, or a pool id that is another's member.
        for (i, (pool, members)) in pools.iter().enumerate() {
            for (other, others) in &pools[..i] {
                let fail = |message: String| OptionsError {
                    option: format!("{name}.{pool}"),
                    message: format!("{name}.{pool} {message}"),
                };
                if let Some(shared) = members.iter().find(|m| others.contains(m)) {
                    return Err(fail(format!(
                        "must not list {}, a member of {name}.{other} already",
                        js_string(shared)
                    )));
                }
                if others.contains(pool) {
                    return Err(fail(format!(
                        "must not be a pool id: it is a member of {name}.{other}"
                    )));
                }
                if members.contains(other) {
                    return Err(fail(format!(
                        "must not list {}: it is a pool id",
                        js_string(other)
                    )));
                }
            }
        }
        Ok(Pools { pools })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OptionValue::{List, Map, Number, Text};

    fn pools(entries: &[(&str, OptionValue)]) -> Result<Pools, OptionsError> {
        let map = entries.iter().map(|(k, v)| (k.to_string(), v.clone()));
        Pools::parse("pools", &Map(map.collect()))
    }

    fn list(members: &[&str]) -> OptionValue {
        List(members.iter().map(|m| Text(m.to_string())).collect())
    }

    #[test]
    fn a_pool_lists_its_members_in_order() {
        let p = pools(&[("gemini", list(&["k1", "k2"])), ("groq", list(&["g1"]))]).unwrap();
        assert_eq!(
            p.members("gemini"),
            Some(&["k1".to_string(), "k2".to_string()][..])
        );
        assert_eq!(p.members("k1"), None);
        assert_eq!(
            Pools::parse("pools", &p.to_value()),
            Ok(p.clone()),
            "pacer.options shows what setOptions takes"
        );
    }

    #[test]
    fn every_malformed_pool_is_an_error_naming_it() {
        // The pools given, the option the error names, its message.
        type Case<'a> = (&'a [(&'a str, OptionValue)], &'a str, &'a str);
        let cases: [Case<'_>; 7] = [
            (
                &[("a", list(&[]))],
                "pools.a",
                "pools.a must have at least one member (got [])",
            ),
            (
                &[("a", list(&["k", "k"]))],
                "pools.a",
                "pools.a must not list a member twice (got \"k\" twice)",
            ),
            (
                &[("a", list(&["k"])), ("b", list(&["j", "k"]))],
                "pools.b",
                "pools.b must not list \"k\", a member of pools.a already",
            ),
            (
                &[("a", list(&["b"])), ("b", list(&["j"]))],
                "pools.b",
                "pools.b must not be a pool id: it is a member of pools.a",
            ),
            (
                &[("a", list(&["a"]))],
                "pools.a",
                "pools.a must not list its own pool id as a member (got \"a\")",
            ),
            (
                &[("a", Text("k".into()))],
                "pools.a",
                "pools.a must be an array of non-empty providerId strings (got \"k\")",
            ),
            (
                &[("a", List(vec![Text("k".into()), Number(1.0)]))],
                "pools.a",
                "pools.a must be an array of non-empty providerId strings (got 1 in it)",
            ),
        ];
        for (entries, option, message) in cases {
            let error = pools(entries).unwrap_err();
            assert_eq!(
                (error.option.as_str(), error.message.as_str()),
                (option, message)
            );
        }
        assert_eq!(
            pools(&[("b", list(&["j"])), ("a", list(&["b"]))])
                .unwrap_err()
                .option,
            "pools.a",
            "a member that is a pool id listed before it"
        );
        assert_eq!(
            pools(&[("a", list(&[""]))]).unwrap_err().message,
            "pools.a must be an array of non-empty providerId strings (got \"\" in it)"
        );
        assert_eq!(
            Pools::parse("pools", &Number(3.0)).unwrap_err().message,
            "pools must be an object mapping a pool id to an array of providerIds (got 3)"
        );
    }
}
