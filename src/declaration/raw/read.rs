//! Reading the raw structs straight from the JSON bytes, value by value.
//!
//! A [`Field`] is read without a `serde_json::Value` of it first: a value
//! of the right JSON type goes straight into its Rust type (a list item by
//! item, an object key by key), and only a value of the wrong type is kept
//! whole, as the [`Field::Invalid`] the validator reports. A resource is
//! read by its `type`: the keys before it (its `id`, mostly) are held
//! aside as the JSON text they are (a slice of the bytes read, never a
//! tree of values: a container whose `type` comes last, after 130,000
//! ports, would otherwise cost 30 times its bytes), and the rest goes
//! straight into the struct of that type; a
//! resource whose type is missing or unknown is kept whole for the
//! validator to say why. So the whole document never exists twice in
//! memory, as a tree of values and again as structs.
//!
//! The bytes have passed [`crate::declaration::strict::check`] first: they
//! are valid JSON and no object repeats a key, so a struct never sees a
//! key twice.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess,
    Visitor,
};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{plain_words, Field, Listed, RawDeclaration, RawResource, MAX_RESOURCES};

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FieldVisitor(PhantomData))
    }
}

/// The outcome of reading a scalar as `T`: present, or kept as the value sent.
fn scalar<T, E: fmt::Display>(read: Result<T, E>, value: impl FnOnce() -> Value) -> Field<T> {
    match read {
        Ok(v) => Field::Present(v),
        Err(e) => Field::Invalid {
            value: value(),
            error: plain_words(&e.to_string()),
        },
    }
}

struct FieldVisitor<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned> Visitor<'de> for FieldVisitor<T> {
    type Value = Field<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Field<T>, E> {
        Ok(scalar(
            T::deserialize(IntoDeserializer::<E>::into_deserializer(v)),
            || Value::Bool(v),
        ))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Field<T>, E> {
        Ok(scalar(
            T::deserialize(IntoDeserializer::<E>::into_deserializer(v)),
            || Value::from(v),
        ))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Field<T>, E> {
        Ok(scalar(
            T::deserialize(IntoDeserializer::<E>::into_deserializer(v)),
            || Value::from(v),
        ))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Field<T>, E> {
        // JSON cannot spell a non-finite number: `Null` is never reached.
        Ok(scalar(
            T::deserialize(IntoDeserializer::<E>::into_deserializer(v)),
            || serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field<T>, E> {
        Ok(scalar(
            T::deserialize(IntoDeserializer::<E>::into_deserializer(v)),
            || Value::String(v.to_owned()),
        ))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Field<T>, E> {
        match T::deserialize(de::value::StrDeserializer::<E>::new(&v)) {
            Ok(t) => Ok(Field::Present(t)),
            Err(e) => Ok(Field::Invalid {
                error: plain_words(&e.to_string()),
                value: Value::String(v),
            }),
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<Field<T>, E> {
        Ok(scalar(
            T::deserialize(IntoDeserializer::<E>::into_deserializer(())),
            || Value::Null,
        ))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field<T>, A::Error> {
        let mut counted = Counted {
            inner: &mut seq,
            taken: 0,
        };
        match T::deserialize(SeqAccessDeserializer::new(&mut counted)) {
            Ok(v) => Ok(Field::Present(v)),
            // Refused before its first item: not a list type. Keep it whole.
            Err(e) if counted.taken == 0 => Ok(Field::Invalid {
                error: plain_words(&e.to_string()),
                value: Value::deserialize(SeqAccessDeserializer::new(&mut seq))?,
            }),
            Err(e) => Err(e),
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<T>, A::Error> {
        let mut counted = Counted {
            inner: &mut map,
            taken: 0,
        };
        match T::deserialize(MapAccessDeserializer::new(&mut counted)) {
            Ok(v) => Ok(Field::Present(v)),
            Err(e) if counted.taken == 0 => Ok(Field::Invalid {
                error: plain_words(&e.to_string()),
                value: Value::deserialize(MapAccessDeserializer::new(&mut map))?,
            }),
            Err(e) => Err(e),
        }
    }
}

/// A list or object whose items are counted as they are taken: a type
/// that refuses one before taking any (a string given an array) is a
/// wrong type; one that fails later failed for good.
struct Counted<'a, A> {
    inner: &'a mut A,
    taken: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Counted<'_, A> {
    type Error = A::Error;
    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        self.taken += 1;
        self.inner.next_element_seed(seed)
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Counted<'_, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.taken += 1;
        self.inner.next_key_seed(seed)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// One item of `resources`: a resource of a known type, or the value sent.
#[derive(Debug)]
pub(super) struct RawEntry(pub(super) Field<RawResource>);

impl<'de> Deserialize<'de> for RawEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

/// What is not an object is kept as the value it is.
fn not_an_object<E>(value: Value) -> Result<RawEntry, E> {
    Ok(RawEntry(Field::Invalid {
        error: "a resource is an object".to_owned(),
        value,
    }))
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = RawEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resource object")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawEntry, E> {
        not_an_object(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawEntry, E> {
        not_an_object(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawEntry, E> {
        not_an_object(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawEntry, E> {
        not_an_object(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawEntry, E> {
        not_an_object(Value::String(v.to_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawEntry, E> {
        not_an_object(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawEntry, A::Error> {
        not_an_object(Value::deserialize(SeqAccessDeserializer::new(seq))?)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
        // The keys before `type`, held aside until the type is known, as
        // the text they are in the bytes read.
        let mut before: Vec<(String, &'de RawValue)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value: &'de RawValue = map.next_value()?;
            if key == "type" {
                let name = serde_json::from_str::<String>(value.get()).ok();
                if let Some(kind) = name.as_deref().and_then(TypeName::of) {
                    let rest = Chain {
                        before: before.into_iter(),
                        value: None,
                        live: &mut map,
                    };
                    let resource = kind.read(MapAccessDeserializer::new(rest))?;
                    return Ok(RawEntry(Field::Present(resource)));
                }
            }
            before.push((key, value));
        }
        // No type, or one not known: kept whole, for the validator to say why.
        Ok(RawEntry(Field::Invalid {
            error: "a resource of unknown type".to_owned(),
            value: Value::Object(
                before
                    .into_iter()
                    .map(|(key, raw)| (key, serde_json::from_str(raw.get()).unwrap_or(Value::Null)))
                    .collect(),
            ),
        }))
    }
}

/// A resource type by its name in `type`.
#[derive(Debug, Clone, Copy)]
enum TypeName {
    Container,
    File,
    Directory,
    Unit,
    Identity,
    SharedFolder,
    Network,
    Volume,
}

impl TypeName {
    fn of(name: &str) -> Option<TypeName> {
        Some(match name {
            "container" => TypeName::Container,
            "file" => TypeName::File,
            "directory" => TypeName::Directory,
            "unit" => TypeName::Unit,
            "identity" => TypeName::Identity,
            "shared-folder" => TypeName::SharedFolder,
            "network" => TypeName::Network,
            "volume" => TypeName::Volume,
            _ => return None,
        })
    }

    /// The rest of the object read as a resource of this type.
    fn read<'de, D: Deserializer<'de>>(self, d: D) -> Result<RawResource, D::Error> {
        Ok(match self {
            TypeName::Container => RawResource::Container(Box::new(Deserialize::deserialize(d)?)),
            TypeName::File => RawResource::File(Deserialize::deserialize(d)?),
            TypeName::Directory => RawResource::Directory(Deserialize::deserialize(d)?),
            TypeName::Unit => RawResource::Unit(Deserialize::deserialize(d)?),
            TypeName::Identity => RawResource::Identity(Deserialize::deserialize(d)?),
            TypeName::SharedFolder => RawResource::SharedFolder(Deserialize::deserialize(d)?),
            TypeName::Network => RawResource::Network(Box::new(Deserialize::deserialize(d)?)),
            TypeName::Volume => RawResource::Volume(Deserialize::deserialize(d)?),
        })
    }
}

/// The keys held aside, then the rest of the object as it is read.
struct Chain<'a, 'de, A> {
    before: std::vec::IntoIter<(String, &'de RawValue)>,
    /// The value of the key just given from `before`.
    value: Option<&'de RawValue>,
    live: &'a mut A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Chain<'_, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.before.next() {
            self.value = Some(value);
            return seed
                .deserialize(de::value::StringDeserializer::<A::Error>::new(key))
                .map(Some);
        }
        self.live.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value).map_err(de::Error::custom),
            None => self.live.next_value_seed(seed),
        }
    }
}

/// Read a declaration from `bytes` (already checked: valid JSON, an
/// object, no repeated key), giving `each` resource of its list in turn,
/// as soon as it is read.
pub fn read_declaration(
    bytes: &[u8],
    each: impl FnMut(Field<RawResource>),
) -> Result<RawDeclaration, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let raw = DeclarationSeed { each }.deserialize(&mut de)?;
    de.end()?;
    Ok(raw)
}

/// The declaration object, its resources given to `each`.
struct DeclarationSeed<F> {
    each: F,
}

impl<'de, F: FnMut(Field<RawResource>)> DeserializeSeed<'de> for DeclarationSeed<F> {
    type Value = RawDeclaration;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<RawDeclaration, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, F: FnMut(Field<RawResource>)> Visitor<'de> for DeclarationSeed<F> {
    type Value = RawDeclaration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a declaration object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<RawDeclaration, A::Error> {
        let mut raw = RawDeclaration::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "declaration" => raw.declaration = map.next_value()?,
                "resources" => {
                    raw.resources = map.next_value_seed(ResourcesSeed {
                        each: &mut self.each,
                    })?
                }
                _ => {
                    // Only its name is reported: the value is not kept.
                    map.next_value::<IgnoredAny>()?;
                    raw.unknown.insert(key, Value::Null);
                }
            }
        }
        Ok(raw)
    }
}

/// The `resources` value: each item given to `each`, or what it is instead.
struct ResourcesSeed<'f, F> {
    each: &'f mut F,
}

impl<'de, F: FnMut(Field<RawResource>)> DeserializeSeed<'de> for ResourcesSeed<'_, F> {
    type Value = Listed;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Listed, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(Field<RawResource>)> Visitor<'de> for ResourcesSeed<'_, F> {
    type Value = Listed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of resources")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Listed, A::Error> {
        let mut read = 0;
        while read < MAX_RESOURCES {
            let Some(RawEntry(resource)) = seq.next_element()? else {
                return Ok(Listed::Read { beyond: 0 });
            };
            (self.each)(resource);
            read += 1;
        }
        let mut beyond = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            beyond += 1;
        }
        Ok(Listed::Read { beyond })
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Listed, E> {
        Ok(Listed::Invalid(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Listed, E> {
        Ok(Listed::Invalid(Value::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Listed, E> {
        Ok(Listed::Invalid(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Listed, E> {
        Ok(Listed::Invalid(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Listed, E> {
        Ok(Listed::Invalid(Value::String(v.to_owned())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Listed, E> {
        Ok(Listed::Invalid(Value::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Listed, A::Error> {
        // Only its kind is said: its keys are not kept.
        let _ = IgnoredAny::deserialize(MapAccessDeserializer::new(map))?;
        Ok(Listed::Invalid(Value::Object(serde_json::Map::new())))
    }
}
