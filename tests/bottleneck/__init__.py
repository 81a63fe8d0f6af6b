"""Tests of implicit_bias.bottleneck (a package, so that test module names such as test_tasks do not clash with other parts')."""
