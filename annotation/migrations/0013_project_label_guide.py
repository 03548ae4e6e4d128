from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0012_drafts_skip_edit")]

    operations = [
        migrations.AddField(
            model_name="project",
            name="label_guide",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
