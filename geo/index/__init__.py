"""Spatial primitives, no rules: spherical maths, polygon grid, point index, radius grids and tables, nearest
grid, single-point candidate tables. See README.md in this folder for what code here may not do."""
