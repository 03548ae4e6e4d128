from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_item_derived_group")]

    operations = [
        migrations.AddField(
            model_name="project",
            name="label_guide",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
