//! A shared object whose holder does not know its type: [`Erased`], what
//! `Arc<dyn Any + Send + Sync>` is, for objects that are themselves one
//! pointer to a counted allocation (`std::sync::Arc`, `triomphe::ThinArc`).
//!
//! The scrape cache keeps one handle per series of the storage it appends
//! to, without knowing the storage: the head's series are `ThinArc`s (their
//! labels in the same allocation as their count and data), which do not
//! coerce to `dyn Any`. An [`Erased`] keeps such an object as its raw
//! pointer and the type's clone, drop and type id: two words, no allocation
//! of its own, and the object is lent back by [`Erased::with`] as the type
//! it was, without touching its count.

use std::any::TypeId;
use std::mem::ManuallyDrop;

/// An object that is one pointer to a reference-counted allocation and can
/// be given up as that pointer and taken back.
///
/// # Safety
///
/// `from_raw(into_raw(x))` must give back `x` (the same object, its count
/// unchanged), and a pointer from `into_raw` must stay valid while the
/// object it stands for is not dropped: [`Erased`] rebuilds the object from
/// the pointer to lend it (never dropping that copy), to clone it (then
/// giving up the clone), and once to drop it.
pub unsafe trait RawShared: Clone + Send + Sync + 'static {
    /// Gives up the object as its pointer, keeping its count.
    fn into_raw(self) -> *const ();

    /// Takes back an object [`RawShared::into_raw`] gave.
    ///
    /// # Safety
    ///
    /// `raw` must come from `into_raw` of this type and must not have been
    /// taken back already (except as a copy that is never dropped).
    unsafe fn from_raw(raw: *const ()) -> Self;
}

// SAFETY: `Arc::into_raw` and `Arc::from_raw` are each other's inverse and
// leave the count as it is.
unsafe impl<T: Send + Sync + 'static> RawShared for std::sync::Arc<T> {
    fn into_raw(self) -> *const () {
        std::sync::Arc::into_raw(self).cast()
    }

    unsafe fn from_raw(raw: *const ()) -> Self {
        // SAFETY: the caller gives a pointer of `into_raw` above.
        unsafe { std::sync::Arc::from_raw(raw.cast::<T>()) }
    }
}

/// What an [`Erased`] does with its pointer, for one type.
struct Kind {
    type_id: fn() -> TypeId,
    clone: unsafe fn(*const ()) -> *const (),
    drop: unsafe fn(*const ()),
}

/// The [`Kind`] of `T`.
struct KindOf<T>(std::marker::PhantomData<T>);

impl<T: RawShared> KindOf<T> {
    const KIND: &'static Kind = &Kind {
        type_id: TypeId::of::<T>,
        clone: clone_raw::<T>,
        drop: drop_raw::<T>,
    };
}

/// Clones the object behind `raw` and gives up the clone.
///
/// # Safety
///
/// `raw` is `T::into_raw` of a live `T`.
unsafe fn clone_raw<T: RawShared>(raw: *const ()) -> *const () {
    // SAFETY: as the caller says; the copy is not dropped.
    let lent = ManuallyDrop::new(unsafe { T::from_raw(raw) });
    T::clone(&lent).into_raw()
}

/// Drops the object behind `raw`.
///
/// # Safety
///
/// `raw` is `T::into_raw` of a live `T`, not used again.
unsafe fn drop_raw<T: RawShared>(raw: *const ()) {
    // SAFETY: as the caller says.
    drop(unsafe { T::from_raw(raw) });
}

/// A [`RawShared`] object of a type its holder does not name.
pub struct Erased {
    raw: *const (),
    kind: &'static Kind,
}

// SAFETY: an `Erased` only holds a `RawShared` object, which is Send and
// Sync, and only lends it as `&T`.
unsafe impl Send for Erased {}
// SAFETY: as for Send.
unsafe impl Sync for Erased {}

impl Erased {
    /// Holds `value`.
    pub fn new<T: RawShared>(value: T) -> Self {
        Erased {
            raw: value.into_raw(),
            kind: KindOf::<T>::KIND,
        }
    }

    /// Whether the object is a `T`.
    pub fn is<T: RawShared>(&self) -> bool {
        (self.kind.type_id)() == TypeId::of::<T>()
    }

    /// Calls `f` with the object as a `T`, or gives `None` if it is not one.
    pub fn with<T: RawShared, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if !self.is::<T>() {
            return None;
        }
        // SAFETY: `raw` is `T::into_raw` of the object this holds (the type
        // is checked), alive while `self` is; the copy is not dropped.
        let lent = ManuallyDrop::new(unsafe { T::from_raw(self.raw) });
        Some(f(&lent))
    }

    /// The object's pointer (to prefetch what it points to).
    pub fn as_ptr(&self) -> *const () {
        self.raw
    }
}

impl Clone for Erased {
    fn clone(&self) -> Self {
        Erased {
            // SAFETY: `raw` is the live object of `kind`'s type.
            raw: unsafe { (self.kind.clone)(self.raw) },
            kind: self.kind,
        }
    }
}

impl Drop for Erased {
    fn drop(&mut self) {
        // SAFETY: `raw` is the object of `kind`'s type, dropped once, here.
        unsafe { (self.kind.drop)(self.raw) }
    }
}

impl std::fmt::Debug for Erased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Erased").field("raw", &self.raw).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn an_object_is_lent_as_its_own_type_only() {
        let e = Erased::new(Arc::new(7u64));
        assert!(e.is::<Arc<u64>>());
        assert_eq!(e.with(|v: &Arc<u64>| **v), Some(7));
        assert_eq!(e.with(|v: &Arc<u32>| **v), None);
        assert!(!e.is::<Arc<String>>());
    }

    #[test]
    fn clones_and_drops_count_the_object_once_each() {
        let shared = Arc::new(String::from("series"));
        let e = Erased::new(shared.clone());
        assert_eq!(Arc::strong_count(&shared), 2);
        // Lending does not count.
        e.with(|s: &Arc<String>| assert_eq!(Arc::strong_count(s), 2));
        assert_eq!(Arc::strong_count(&shared), 2);
        let copies: Vec<Erased> = (0..5).map(|_| e.clone()).collect();
        assert_eq!(Arc::strong_count(&shared), 7);
        // A clone taken while lent outlives the lending.
        let kept = e.with(|s: &Arc<String>| s.clone()).expect("a String");
        assert_eq!(Arc::strong_count(&shared), 8);
        drop(copies);
        drop(e);
        assert_eq!(Arc::strong_count(&shared), 2);
        drop(kept);
        assert_eq!(Arc::strong_count(&shared), 1);
    }

    #[test]
    fn a_panic_while_lent_drops_nothing() {
        let shared = Arc::new(1u8);
        let e = Erased::new(shared.clone());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            e.with(|_: &Arc<u8>| panic!("in the lender"))
        }));
        assert!(caught.is_err());
        assert_eq!(Arc::strong_count(&shared), 2);
        drop(e);
        assert_eq!(Arc::strong_count(&shared), 1);
    }

    #[test]
    fn held_across_threads() {
        let shared = Arc::new(vec![1, 2, 3]);
        let e = Erased::new(shared.clone());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let mine = e.clone();
                std::thread::spawn(move || mine.with(|v: &Arc<Vec<i32>>| v.iter().sum::<i32>()))
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("no panic"), Some(6));
        }
        drop(e);
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
