# -*- coding: utf-8 -*-
# Copyright: gpupool.core contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by unit tests, integration tests and benchmarks (plain functions, no pytest fixtures, no test bed):
tests/fixtures/ holds the pytest fixtures that start a test bed, tests/support/ what any test may call."""
