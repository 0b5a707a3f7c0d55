//! Module and driver registration: `fmodsw` (modules by name, for I_PUSH) and `cdevsw`
//! (drivers by major number).
//!
//! Fixed capacity so that registration never allocates and a `Registry` can live in a static
//! once the platform wraps it in a lock. Entries are `&'static StreamTab`: a module's tables
//! live as long as the kernel module that registered it, which unregisters before unloading.

use super::module::StreamTab;
use crate::errno::Errno;

/// Maximum number of registered modules.
pub const MAX_MODULES: usize = 32;
/// Maximum number of registered drivers.
pub const MAX_DRIVERS: usize = 32;

/// The switch tables.
pub struct Registry {
    fmodsw: [Option<&'static StreamTab>; MAX_MODULES],
    cdevsw: [Option<(u32, &'static StreamTab)>; MAX_DRIVERS],
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// Empty tables.
    pub const fn new() -> Registry {
        Registry {
            fmodsw: [None; MAX_MODULES],
            cdevsw: [None; MAX_DRIVERS],
        }
    }

    /// register_strmod: add a module under `tab.info.mi_idname`. EBUSY if the name is taken,
    /// EINVAL for an empty name, ENOSR if the table is full.
    pub fn register_module(&mut self, tab: &'static StreamTab) -> Result<(), Errno> {
        if tab.info.mi_idname.is_empty() {
            return Err(Errno::EINVAL);
        }
        if self.find_module(tab.info.mi_idname).is_some() {
            return Err(Errno::EBUSY);
        }
        let slot = self
            .fmodsw
            .iter_mut()
            .find(|s| s.is_none())
            .ok_or(Errno::ENOSR)?;
        *slot = Some(tab);
        Ok(())
    }

    /// unregister_strmod: remove the module called `name` (EINVAL if there is none).
    pub fn unregister_module(&mut self, name: &str) -> Result<(), Errno> {
        let slot = self
            .fmodsw
            .iter_mut()
            .find(|s| s.is_some_and(|t| t.info.mi_idname == name))
            .ok_or(Errno::EINVAL)?;
        *slot = None;
        Ok(())
    }

    /// fmodsw lookup by name.
    pub fn find_module(&self, name: &str) -> Option<&'static StreamTab> {
        self.fmodsw
            .iter()
            .flatten()
            .copied()
            .find(|t| t.info.mi_idname == name)
    }

    /// register_strdev: add a driver at `major`. EBUSY if the major is taken, ENOSR if full.
    pub fn register_driver(&mut self, major: u32, tab: &'static StreamTab) -> Result<(), Errno> {
        if self.find_driver(major).is_some() {
            return Err(Errno::EBUSY);
        }
        let slot = self
            .cdevsw
            .iter_mut()
            .find(|s| s.is_none())
            .ok_or(Errno::ENOSR)?;
        *slot = Some((major, tab));
        Ok(())
    }

    /// unregister_strdev: remove the driver at `major` (ENXIO if there is none).
    pub fn unregister_driver(&mut self, major: u32) -> Result<(), Errno> {
        let slot = self
            .cdevsw
            .iter_mut()
            .find(|s| s.is_some_and(|(m, _)| m == major))
            .ok_or(Errno::ENXIO)?;
        *slot = None;
        Ok(())
    }

    /// cdevsw lookup by major.
    pub fn find_driver(&self, major: u32) -> Option<&'static StreamTab> {
        self.cdevsw
            .iter()
            .flatten()
            .find(|(m, _)| *m == major)
            .map(|(_, t)| *t)
    }
}
