"""Testing kits shared by Steward's tests, chaos suite and benchmarks (as ``kazoo.testing``).

Nothing in the control plane or the runtime imports this package.
"""
