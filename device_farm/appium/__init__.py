"""Phones behind an Appium server or device cloud: the device, its page-source XML and the pool source."""
