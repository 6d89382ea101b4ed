"""Approval cards and the window's answer path to them (typed or spoken)."""
