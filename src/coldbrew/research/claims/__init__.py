"""Units of work handed out to workers on any number of machines, through a folder or a database."""
