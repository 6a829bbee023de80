"""The hardware edge: GPIO ball sensor and serial port."""
