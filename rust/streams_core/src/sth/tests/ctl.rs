//! ioctl tests
