"""The device pool: sources of devices, exclusive leases, health checks, quarantine and the state kept between processes."""
