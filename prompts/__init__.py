"""The prompt files (``*.md``) as package data: ``prompts/`` at the top of the repository is
mapped onto ``toolplan.prompts`` (pyproject.toml), so a wheel ships the same files an editable
install reads. Load them with :func:`toolplan.planning.prompts.load_prompt`.
"""
