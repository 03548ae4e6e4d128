from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0026_item_text_revisions"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="itemfigures",
            index=models.Index(
                condition=models.Q(("value__contains", {"x": 1})), fields=["project"], name="item_figures_disagree"
            ),
        ),
    ]
