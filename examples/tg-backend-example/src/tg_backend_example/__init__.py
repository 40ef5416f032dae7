"""An example third-party tg backend providing the EXAMPLE device."""
