from django.db import migrations, models


def derive_groups(apps, schema_editor):
    """Items stored without a group get the group their kind derives from the payload, as
    an import now gives them (the NLI kinds: the premise). The kinds' rule is asked through
    the registry, on plain payloads, so that it is written once."""
    from annotation.kinds.registry import get_kind

    Item = apps.get_model("annotation", "Item")
    Project = apps.get_model("annotation", "Project")
    for project in Project.objects.only("pk", "kind").iterator():
        try:
            kind = get_kind(project.kind)
        except KeyError:
            continue
        changed = []
        for item in Item.objects.filter(project_id=project.pk, group="").only("pk", "payload").iterator(chunk_size=2000):
            item.derived_group = kind.derived_group(item.payload if isinstance(item.payload, dict) else {})
            if item.derived_group:
                changed.append(item)
            if len(changed) >= 2000:
                Item.objects.bulk_update(changed, ["derived_group"])
                changed = []
        Item.objects.bulk_update(changed, ["derived_group"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_job_heartbeat_idempotency_fingerprint"),
    ]

    operations = [
        migrations.AddField(
            model_name="item",
            name="derived_group",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.RunPython(derive_groups, migrations.RunPython.noop),
    ]
