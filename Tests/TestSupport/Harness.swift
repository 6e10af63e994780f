// The tests reach the harness (processes, a private bus, temporary directories) through
// TestSupport, as before it became a library of its own that enbench shares.
@_exported import ENHarness
