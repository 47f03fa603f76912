"""The composition root and the process edges: the application factory, the command line,
the components built once at start, the web app and docs pages, health. Nothing else in
docchat imports this package."""
