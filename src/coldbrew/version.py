"""The package version, in a module of its own so the engine can record it without importing the
package facade (which imports the engine)."""

__version__ = "0.1.0"
