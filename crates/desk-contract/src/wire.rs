//! [`wire_enum!`]: a unit enum whose wire names are written once. The macro derives serde with
//! one `rename` per variant from the same list that defines `as_str`, `parse` and `ALL`, so the
//! name a client sees, the name a log line prints and the name a parser accepts cannot drift.

/// Declares a unit enum with serde names, `as_str`, `parse` and `ALL` from one list of
/// `Variant = "wire_name"` lines (each may carry doc comments and attributes).
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(::serde::Serialize, ::serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            $vis const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire name.
            $vis const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            /// The variant of a wire name.
            $vis fn parse(text: &str) -> Option<$name> {
                match text {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        $crate::__wire_enum_schema!($name, $($wire),+);

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// With the `schemars` feature: a `JsonSchema` for a [`wire_enum!`] enum, a string of one of its
/// wire names, named after the enum.
#[cfg(feature = "schemars")]
#[doc(hidden)]
#[macro_export]
macro_rules! __wire_enum_schema {
    ($name:ident, $($wire:literal),+) => {
        impl $crate::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(concat!(module_path!(), "::", stringify!($name)))
            }

            fn json_schema(_: &mut $crate::schemars::SchemaGenerator) -> $crate::schemars::Schema {
                $crate::schemars::json_schema!({"type": "string", "enum": [$($wire),+]})
            }
        }
    };
}

/// Without the `schemars` feature: nothing.
#[cfg(not(feature = "schemars"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __wire_enum_schema {
    ($($tokens:tt)*) => {};
}

#[cfg(test)]
mod tests {
    crate::wire_enum! {
        /// A test enum.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Fruit {
            /// One.
            Apple = "apple",
            /// Two.
            BloodOrange = "blood_orange",
        }
    }

    #[test]
    fn serde_as_str_and_parse_agree() {
        for fruit in Fruit::ALL {
            let json = serde_json::to_string(fruit).unwrap();
            assert_eq!(json, format!("\"{}\"", fruit.as_str()));
            assert_eq!(Fruit::parse(fruit.as_str()), Some(*fruit));
            assert_eq!(serde_json::from_str::<Fruit>(&json).unwrap(), *fruit);
            assert_eq!(fruit.to_string(), fruit.as_str());
        }
        assert_eq!(Fruit::parse("pear"), None);
    }
}
