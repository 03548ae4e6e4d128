from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0023_question_audit"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="itemfigures",
            index=models.Index(
                condition=models.Q(("value__contains", {"x": 1})), fields=["project"], name="item_figures_disagree"
            ),
        ),
    ]
