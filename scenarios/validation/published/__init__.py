"""Validation against published real GPU measurements: the registry (`points`), the predictors
(`predict`) and the report of `draftsim validate --published` (`report`)."""
