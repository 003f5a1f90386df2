package appctl

func (a *App) registerTrace() {}
