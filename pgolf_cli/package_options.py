"""The values `pgolf package` accepts for --track and --code-form, in a module of their own so that
its `--help` and usage errors answer without loading the packager and the audit."""

TRACK_DIRS = {"10min_16mb": "track_10min_16mb", "non_record_16mb": "track_non_record_16mb"}
AUTO = "auto"  # the record track when the runs can be a record, else the non-record track
CODE_FORMS = ("wrapped", "plain")
