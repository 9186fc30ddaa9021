"""Your data as it comes: named-column tables, their readers, the guessed layout and the ids."""
