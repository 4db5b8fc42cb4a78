"""Phones behind an Appium server or device cloud: the device, its page-source XML and the pool source. It implements :mod:`device_farm.sources` and never imports the pool."""
