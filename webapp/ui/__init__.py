"""The NiceGUI web app: pages, shared layout and components. It talks to the engine only through
`webapp.engine.engine.Engine` commands and the live stream (`webapp.ui.live`)."""
