"""Diagnosis of a ROCm setup: checks over a host root that explain what is wrong and how to fix it."""
