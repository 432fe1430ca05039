//! One item or many, without an allocation for the one: most requests have one limit, and
//! their plan and decisions are built on every request.

/// A list that holds one item in place.
pub(super) enum Each<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> Each<T> {
    pub(super) fn as_slice(&self) -> &[T] {
        match self {
            Each::One(item) => std::slice::from_ref(item),
            Each::Many(items) => items,
        }
    }

    pub(super) fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Each::One(item) => std::slice::from_mut(item),
            Each::Many(items) => items,
        }
    }

    /// The items `make` gives for each of `len` places, one in place when `len` is 1.
    pub(super) fn filled(len: usize, mut make: impl FnMut() -> T) -> Each<T> {
        match len {
            1 => Each::One(make()),
            _ => Each::Many((0..len).map(|_| make()).collect()),
        }
    }
}
